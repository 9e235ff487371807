import FaceGateCore
import FaceGateTestSupport
import Foundation
import Testing

/// `DELETE /v1/apps/{appId}` on the real stack: every row of the app's data goes from every table but the audit trail,
/// every matcher drops its templates, and what the app's credentials could do stops.
@Suite struct AppDeletionTests {
    @Test func deletingAnAppLeavesOnlyItsAuditTrail() async throws {
        try await TestStack.with(fresh: true) { stack in
            let app = try await stack.createApp(extra: ["keepEnrollmentPhotos": true])
            let (number, name) = ("E-GONE-1", "Ada Deleted")
            let user = try await stack.createUser(app, employeeNumber: number, name: name)
            let enrolled = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces?photoConsent=true", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama.jpg"), contentType: "image/jpeg")
            #expect(enrolled.status == 201 && enrolled.json["photoKept"] as? Bool == true, "\(enrolled.json)")
            let token = try await stack.accessToken(app)
            #expect(try await stack.faceLogin(token, device: "phone-gone-1", photo: "obama2.jpg").status == 200)
            let kiosk = try await stack.registerKiosk(app)
            let scoped = try await stack.call("POST", "/v1/operator-keys", bearer: stack.adminKey, json: ["name": "only this app", "appIds": [app.id]])
            let scopedKey = try #require(scoped.string("operatorKey"), "\(scoped.json)")
            let matcher = try #require(stack.matcher)
            #expect(matcher.templateCount == 1)

            let deleted = try await stack.call("DELETE", "/v1/apps/\(app.id)", bearer: stack.adminKey)
            #expect(deleted.status == 204)
            #expect(try await stack.call("GET", "/v1/apps/\(app.id)", bearer: stack.adminKey).errorCode == "NOT_FOUND")
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)", bearer: stack.adminKey).errorCode == "NOT_FOUND", "deleted once")
            let login = try await stack.faceLogin(token, device: "phone-gone-1", photo: "obama2.jpg")
            #expect(login.errorCode == "ACCESS_TOKEN_INVALID", "the app's access tokens die with it")
            #expect(try await stack.call("POST", "/v1/access-tokens", basic: (app.id, app.secret)).status == 401, "and its secret")
            #expect(try await stack.call("GET", "/v1/apps", bearer: scopedKey).status == 401, "a key for this app only is revoked")

            // Nothing of the app in any table but the audit trail (the scan reads every row of every table).
            let scan = try await PrivacyScan.scan(stack, secrets: [app.id, user, number, name, kiosk.id, kiosk.jkt])
            let left = scan.findings.filter { !$0.contains(" offset ") && !$0.hasPrefix("transactions:") && !$0.hasPrefix("transaction_chain_heads:") }
            #expect(left.isEmpty, "\(left)")
            #expect(scan.findings.contains { $0.hasPrefix("transactions:") }, "the trail is kept")
            // Nothing in the matcher's gallery: the broadcasts, or failing them the next reconciliation, drop it.
            let deadline = ContinuousClock.now + .seconds(10)
            while matcher.templateCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
            #expect(matcher.templateCount == 0)

            // The trail still verifies, and its last row says who deleted the app and what went.
            let verify = try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)", bearer: stack.adminKey)
            #expect(verify.json["ok"] as? Bool == true, "\(verify.json)")
            let rows = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=app.delete", bearer: stack.adminKey)
            let row = try #require((rows.json["items"] as? [[String: Any]])?.first, "\(rows.json)")
            let detail = try #require(row["detail"] as? [String: Any])
            #expect(row["outcome"] as? String == "SUCCESS")
            #expect(detail["usersErased"] as? String == "1" && detail["templatesErased"] as? String == "1", "\(detail)")
        }
    }
}
