import FaceGateCore
import FaceGateTestSupport
import Foundation
import PostgresClient
import ServiceKit
import Testing

/// What app developers and operators expect beyond login: 1:1 verify, 1:N search, several templates per
/// user, idempotent creates, and operator and auditor keys that can be listed, limited, expired and revoked.
@Suite(.serialized) struct IntegratorTests {
    @Test func verifySearchAndTemplatesOnARealStack() async throws {
        try await TestStack.with(extra: ["FACEGATE_MAX_FACES_PER_USER": "2"]) { stack in
            let app = try await stack.createApp()
            let obama = try await stack.createUser(app, employeeNumber: "E1", name: "Barack Obama")
            let biden = try await stack.createUser(app, employeeNumber: "E2", name: "Joe Biden")
            let first = try await stack.enroll(app, user: obama, photo: "obama.jpg")
            #expect(first.status == 201)
            #expect(try await stack.enroll(app, user: biden, photo: "biden.jpg").status == 201)
            let token = try await stack.accessToken(app)
            let photo = try TestEnvironment.image("obama2.jpg")
            func clientVerify(_ query: String) async throws -> TestStack.Reply {
                try await stack.call("POST", "/v1/face-verify?\(query)", bearer: token, body: photo, contentType: "image/jpeg",
                                     headers: ["X-Device-Id": "verify-phone"])
            }

            // A client compares only with the users its device is bound to: this phone binds to E1 by a confirmed face login.
            #expect(try await clientVerify("employeeNumber=E1").json["match"] as? Bool == false, "not bound yet")
            let login = try await stack.faceLogin(token, device: "verify-phone", photo: "obama2.jpg")
            let confirmed = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                                 json: ["confirmationId": try #require(login.string("confirmationId")), "employeeNumber": "E1"],
                                                 headers: ["X-Device-Id": "verify-phone"])
            #expect(confirmed.string("status") == "SUCCESS")

            // A client learns yes or no, never a score; an unknown user is a plain no.
            let yes = try await clientVerify("employeeNumber=E1")
            #expect(yes.status == 200)
            #expect(yes.json["match"] as? Bool == true)
            #expect(yes.json["score"] == nil)
            #expect(yes.string("transactionId") != nil)
            let no = try await clientVerify("employeeNumber=E2")
            #expect(no.json["match"] as? Bool == false)
            #expect(no.json.keys.sorted() == ["match", "transactionId"])
            let nobody = try await clientVerify("employeeNumber=E404")
            #expect(nobody.status == 200)
            #expect(nobody.json.keys.sorted() == ["match", "transactionId"])
            #expect(nobody.json["match"] as? Bool == false)
            #expect(try await clientVerify("").errorCode == "INVALID_REQUEST")
            #expect(try await stack.call("POST", "/v1/face-verify?userId=\(obama)", bearer: token, body: photo, contentType: "image/jpeg").status == 400)

            // The app server names the user in multipart fields and also gets the distance.
            let (body, type) = KioskDriver.multipart(fields: ["userId": obama], files: [("image", photo)])
            let scored = try await stack.call("POST", "/v1/face-verify", basic: (app.id, app.secret), body: body, contentType: type)
            #expect(scored.status == 200)
            #expect(scored.json["match"] as? Bool == true)
            let score = try #require(scored.json["score"] as? Double)
            let threshold = try #require(scored.json["threshold"] as? Double)
            #expect(score < threshold)
            #expect(scored.string("model") == "sface-2021dec")
            let unknown = try await stack.call("POST", "/v1/face-verify?userId=\(UUID().uuidString)", basic: (app.id, app.secret),
                                               body: photo, contentType: "image/jpeg")
            #expect(unknown.status == 404)

            // 1:N search: operators see candidates, the app server only the decision.
            let searched = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search?limit=2", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg")
            #expect(searched.status == 200)
            #expect(searched.string("outcome") == "MATCH")
            #expect((searched.json["match"] as? [String: Any])?["employeeNumber"] as? String == "E1")
            let candidates = searched.json["candidates"] as? [[String: Any]] ?? []
            #expect(candidates.count == 2)
            #expect(candidates.first?["userId"] as? String == obama)
            let asServer = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", basic: (app.id, app.secret),
                                                body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg")
            #expect((asServer.json["match"] as? [String: Any])?["userId"] as? String == obama)
            #expect(asServer.json["candidates"] == nil)
            let other = try await stack.createApp()
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", basic: (other.id, other.secret),
                                         body: photo, contentType: "image/jpeg").status == 403)

            // Templates: a second photo (sent twice with one Idempotency-Key: one template), then the limit.
            let key = ["Idempotency-Key": "enroll-\(UUID())"]
            let second = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(obama)/faces", bearer: stack.adminKey,
                                              body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg", headers: key)
            #expect(second.status == 201)
            let replayed = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(obama)/faces", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg", headers: key)
            #expect(replayed.status == 201)
            #expect(replayed.headers["idempotent-replayed"] == "true")
            #expect(replayed.string("templateId") == second.string("templateId"))
            // An answer lost after the matcher committed (the gateway died before keeping it): the retry under the same key
            // gets that template from the matcher's record, although it filled the user's last place.
            _ = try await stack.database.pool.query("DELETE FROM idempotent_requests")
            let retried = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(obama)/faces", bearer: stack.adminKey,
                                               body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg", headers: key)
            #expect(retried.status == 201, "\(String(decoding: retried.body, as: UTF8.self))")
            #expect(retried.string("templateId") == second.string("templateId"))
            let full = try await stack.enroll(app, user: obama, photo: "obama2.jpg")
            #expect(full.status == 409)
            #expect(full.errorCode == "FACE_LIMIT_REACHED")
            let faces = try await stack.call("GET", "/v1/apps/\(app.id)/users/\(obama)/faces", bearer: stack.adminKey)
            let templates = (faces.json["items"] as? [[String: Any]] ?? []).compactMap { $0["templateId"] as? String }
            #expect(templates.count == 2)

            // Deleting both templates reaches the matcher: the face is no longer found.
            for template in templates {
                #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/users/\(obama)/faces/\(template)", bearer: stack.adminKey).status == 204)
            }
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/users/\(obama)/faces/\(templates[0])", bearer: stack.adminKey).status == 404)
            var outcome: String?
            for _ in 0..<50 {
                outcome = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey,
                                               body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg").string("outcome")
                if outcome == "NO_MATCH_FACE" { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(outcome == "NO_MATCH_FACE")
            #expect(try await stack.enroll(app, user: obama, photo: "obama.jpg").status == 201)

            // Every comparison is in the audit trail, the client's without a score.
            let audited = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=face.verify", bearer: stack.adminKey)
            let rows = audited.json["items"] as? [[String: Any]] ?? []
            #expect(rows.count == 8)
            #expect(rows.contains { $0["outcome"] as? String == "NO_MATCH_FACE" })
            let searches = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=face.search", bearer: stack.adminKey)
            #expect((searches.json["items"] as? [Any])?.count ?? 0 >= 3)

            // Two enrollments at once for the user's last place (the matcher takes two jobs at a time): one takes it, the other
            // is refused, and the user holds the limit, not more.
            async let one = stack.enroll(app, user: obama, photo: "obama2.jpg")
            async let two = stack.enroll(app, user: obama, photo: "obama3.jpg")
            let answers = try await [one, two]
            #expect(answers.map(\.status).sorted() == [201, 409])
            #expect(answers.contains { $0.errorCode == "FACE_LIMIT_REACHED" })
            let held = try await stack.database.pool.query("SELECT count(*) AS n FROM face_templates WHERE user_id = \(UUID(uuidString: obama)!)")
            #expect(try held.first?.decode("n", as: Int.self) == 2)
        }
    }

    /// An enrollment retried with its Idempotency-Key after its answer was lost (a 503 at the deadline while the
    /// matcher still finished) sends the enroll job again under the same id: the matcher answers from its record of
    /// the first job, so the user gets one template, not two of the same face.
    @Test func aRetriedEnrollJobGivesTheSameTemplate() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "E1", name: "Barack Obama")
            let requester = RequesterService(runtime: stack.gateway.runtime, producer: try stack.gateway.runtime.makeProducer(),
                                             service: "auth-gateway", timeout: .seconds(20))
            let job = FaceJob(appId: UUID(uuidString: app.id)!,
                              .enroll(FaceJob.Enrollment(image: try TestEnvironment.image("obama.jpg"), userId: UUID(uuidString: user)!)))
            let id = "enroll-\(UUID().uuidString.lowercased())"
            let (first, again) = try await whileRunning([requester]) {
                while !requester.isReady { try await Task.sleep(for: .milliseconds(100)) }
                return (try await requester.faceJob(job, messageId: id, expectedReplies: 1),
                        try await requester.faceJob(job, messageId: id, expectedReplies: 1))
            }
            #expect(first.first?.outcome == .enrolled)
            #expect(again.first?.templateId == first.first?.templateId)
            let held = try await stack.database.pool.query("SELECT count(*) AS n FROM face_templates WHERE user_id = \(UUID(uuidString: user)!)")
            #expect(try held.first?.decode("n", as: Int.self) == 1)
        }
    }

    @Test func keysAndIdempotentCreates() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let appA = try await stack.createApp()
            let appB = try await stack.createApp()
            func create(_ path: String, _ body: [String: Any], key: String = stack.adminKey) async throws -> TestStack.Reply {
                try await stack.call("POST", path, bearer: key, json: body)
            }

            // An operator key limited to app A.
            let scoped = try await create("/v1/operator-keys", ["name": "team A", "appIds": [appA.id]])
            #expect(scoped.status == 201)
            let scopedKey = try #require(scoped.string("operatorKey"))
            let scopedId = try #require(scoped.string("operatorKeyId"))
            #expect(try await stack.call("GET", "/v1/apps/\(appA.id)", bearer: scopedKey).status == 200)
            #expect(try await stack.call("GET", "/v1/apps/\(appB.id)", bearer: scopedKey).errorCode == "FORBIDDEN")
            #expect(try await stack.call("GET", "/v1/apps/\(appB.id)/users", bearer: scopedKey).status == 403)
            let listed = try await stack.call("GET", "/v1/apps", bearer: scopedKey)
            #expect((listed.json["items"] as? [[String: Any]])?.compactMap { $0["appId"] as? String } == [appA.id])
            #expect(try await create("/v1/apps", ["name": "not mine"], key: scopedKey).status == 403)
            #expect(try await create("/v1/operator-keys", ["name": "escalate"], key: scopedKey).status == 403)
            #expect(try await create("/v1/apps/\(appA.id)/users", ["employeeNumber": "S1", "name": "Scoped"], key: scopedKey).status == 201)

            // An operating point as a false-match rate: the threshold comes from the model's calibration.
            let strict = try await create("/v1/apps", ["name": "strict", "falseMatchRate": 1e-6])
            #expect(strict.status == 201)
            #expect(abs((strict.json["matchThreshold"] as? Double ?? 0) - 0.978) < 1e-4)
            #expect(abs(log10(strict.json["estimatedFalseMatchRate"] as? Double ?? 1) + 6) < 1e-3)
            #expect(try await create("/v1/apps", ["name": "both", "falseMatchRate": 1e-6, "matchThreshold": 1.0]).status == 400)
            #expect(try await create("/v1/apps", ["name": "loose", "falseMatchRate": 0.5]).status == 400)
            let patched = try await stack.call("PATCH", "/v1/apps/\(appA.id)", bearer: stack.adminKey, json: ["falseMatchRate": 1e-4])
            #expect(abs((patched.json["matchThreshold"] as? Double ?? 0) - 1.066) < 1e-4)
            // … or as a false-positive identification rate over a gallery: 1 % over 10,000 templates is about 1e-6 a
            // comparison; the app then shows its templates and the FPIR its threshold stands for over them.
            let sized = try await stack.call("PATCH", "/v1/apps/\(appA.id)", bearer: stack.adminKey,
                                             json: ["falsePositiveIdentificationRate": 0.01, "forGallerySize": 10_000])
            #expect(abs((sized.json["matchThreshold"] as? Double ?? 0) - 0.978) < 1e-3, "\(String(decoding: sized.body, as: UTF8.self))")
            let shown = try await stack.call("GET", "/v1/apps/\(appA.id)", bearer: stack.adminKey)
            let templates = try #require(shown.json["galleryTemplates"] as? Int)
            let perComparison = try #require(shown.json["estimatedFalseMatchRate"] as? Double)
            let fpir = try #require(shown.json["estimatedFalsePositiveIdentificationRate"] as? Double)
            #expect(abs(fpir - (1 - pow(1 - perComparison, Double(templates)))) < 1e-12)
            #expect(try await stack.call("PATCH", "/v1/apps/\(appA.id)", bearer: stack.adminKey,
                                         json: ["falsePositiveIdentificationRate": 0.01, "forGallerySize": 10]).errorCode == "INVALID_REQUEST")

            // A global key, an expiring key, bad requests.
            let global = try #require(try await create("/v1/operator-keys", ["name": "platform"]).string("operatorKey"))
            #expect(try await create("/v1/apps", ["name": "by global key"], key: global).status == 201)
            #expect(try await create("/v1/operator-keys", ["name": "past", "expiresAt": "2020-01-01T00:00:00Z"]).status == 400)
            #expect(try await create("/v1/operator-keys", ["name": "ghost app", "appIds": [UUID().uuidString]]).status == 400)
            let expiring = try #require(try await create("/v1/operator-keys", ["name": "brief", "expiresIn": 2]).string("operatorKey"))
            #expect(try await stack.call("GET", "/v1/apps", bearer: expiring).status == 200)

            // Listing never shows a secret; revocation holds at once.
            let keys = try await stack.call("GET", "/v1/operator-keys", bearer: global)
            let items = keys.json["items"] as? [[String: Any]] ?? []
            #expect(items.count == 3)
            #expect(!String(decoding: keys.body, as: UTF8.self).contains("fgo_"))
            #expect(items.first { $0["operatorKeyId"] as? String == scopedId }?["appIds"] as? [String] == [appA.id])
            #expect(try await stack.call("DELETE", "/v1/operator-keys/\(scopedId)", bearer: global).status == 204)
            let refused = try await stack.call("GET", "/v1/apps/\(appA.id)", bearer: scopedKey)
            #expect(refused.errorCode == "UNAUTHORIZED")
            // A failed authentication is in the trail too (platform chain, no key named).
            let refusal = try #require((refused.json["error"] as? [String: Any])?["transactionId"] as? String)
            #expect(try await stack.call("DELETE", "/v1/operator-keys/\(UUID().uuidString)", bearer: global).status == 404)
            let revoked = try await stack.call("GET", "/v1/operator-keys", bearer: global).json["items"] as? [[String: Any]] ?? []
            #expect(revoked.first { $0["operatorKeyId"] as? String == scopedId }?["revokedAt"] is String)

            // Auditor keys: created, listed, revoked.
            let auditor = try await create("/v1/auditors", ["name": "audit A", "appIds": [appA.id]])
            let auditorKey = try #require(auditor.string("auditorKey"))
            let auditorId = try #require(auditor.string("auditorId"))
            #expect(try await stack.call("GET", "/v1/audit/transactions?appId=\(appA.id)", bearer: auditorKey).status == 200)
            let auditors = try await stack.call("GET", "/v1/auditors", bearer: stack.adminKey)
            #expect((auditors.json["items"] as? [[String: Any]])?.map { $0["auditorId"] as? String } == [auditorId])
            #expect(!String(decoding: auditors.body, as: UTF8.self).contains("fga_"))
            #expect(try await stack.call("DELETE", "/v1/auditors/\(auditorId)", bearer: stack.adminKey).status == 204)
            #expect(try await stack.call("GET", "/v1/audit/transactions?appId=\(appA.id)", bearer: auditorKey).status == 401)

            // An auditor key given no apps reads none (default deny); allApps reads them all.
            let blind = try #require(try await create("/v1/auditors", ["name": "no apps"]).string("auditorKey"))
            #expect(try await stack.call("GET", "/v1/audit/transactions?appId=\(appA.id)", bearer: blind).status == 403)
            #expect((try await stack.call("GET", "/v1/audit/transactions", bearer: blind).json["items"] as? [Any])?.isEmpty == true)
            let everywhere = try #require(try await create("/v1/auditors", ["name": "all apps", "allApps": true]).string("auditorKey"))
            #expect(try await stack.call("GET", "/v1/audit/verify?appId=\(appB.id)", bearer: everywhere).status == 200)
            #expect(try await create("/v1/auditors", ["name": "both", "allApps": true, "appIds": [appA.id]]).status == 400)

            // Expired by now.
            try await Task.sleep(for: .seconds(2.2))
            #expect(try await stack.call("GET", "/v1/apps", bearer: expiring).status == 401)

            // Every key action is on the platform chain.
            let platform = try await stack.call("GET", "/v1/audit/transactions?appId=\(platformAppId.uuidString.lowercased())&limit=100",
                                                bearer: stack.adminKey)
            let kinds = (platform.json["items"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
            #expect(kinds.filter { $0 == "operator-key.create" }.count == 3)
            #expect(kinds.contains("operator-key.revoke"))
            #expect(kinds.contains("auditor-key.create") && kinds.contains("auditor-key.revoke"))
            let refusals = (platform.json["items"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "auth.refused" }
            #expect(refusals.contains { $0["transactionId"] as? String == refusal && $0["outcome"] as? String == "UNAUTHORIZED" })

            // Rotating an app's secret kills the access tokens issued before; the previous secret mints new ones
            // during its grace period.
            let before = try await stack.accessToken(appB)
            try await Task.sleep(for: .seconds(1.1))
            let rotated = try await stack.call("POST", "/v1/apps/\(appB.id)/secret", bearer: stack.adminKey)
            let newSecret = try #require(rotated.string("appSecret"))
            func serial(_ token: String) async throws -> TestStack.Reply {
                try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: token, json: ["authMode": "0x42"])
            }
            #expect(try await serial(before).errorCode == "ACCESS_TOKEN_EXPIRED")
            #expect(try await serial(try await stack.accessToken(.init(id: appB.id, secret: newSecret))).status == 200)
            #expect(try await serial(try await stack.accessToken(appB)).status == 200)

            // Idempotent creates: the same key and body answer the first answer again, secrets included.
            let once = ["Idempotency-Key": "app-\(UUID())"]
            let made = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["name": "once"], headers: once)
            let again = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["name": "once"], headers: once)
            #expect(made.status == 201 && again.status == 201)
            #expect(again.string("appId") == made.string("appId"))
            #expect(again.string("appSecret") == made.string("appSecret"))
            #expect(again.headers["idempotent-replayed"] == "true")
            #expect(made.headers["idempotent-replayed"] == nil)
            let reused = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["name": "twice"], headers: once)
            #expect(reused.status == 409)
            #expect(reused.errorCode == "CONFLICT")
            // Keys belong to their caller: another key's same Idempotency-Key is a new request.
            let othersApp = try await stack.call("POST", "/v1/apps", bearer: global, json: ["name": "once"], headers: once)
            #expect(othersApp.status == 201 && othersApp.string("appId") != made.string("appId"))
            let bad = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["name": "x"], headers: ["Idempotency-Key": "has space"])
            #expect(bad.errorCode == "INVALID_REQUEST")

            // A refusal on the merits is kept too; the database holds neither the secret nor the answer in clear.
            let userKey = ["Idempotency-Key": "user-\(UUID())"]
            let user = try await stack.call("POST", "/v1/apps/\(appA.id)/users", bearer: stack.adminKey, json: ["employeeNumber": "S1", "name": "Dup"], headers: userKey)
            #expect(user.status == 409)
            let userAgain = try await stack.call("POST", "/v1/apps/\(appA.id)/users", bearer: stack.adminKey, json: ["employeeNumber": "S1", "name": "Dup"], headers: userKey)
            #expect(userAgain.status == 409 && userAgain.errorCode == "CONFLICT" && userAgain.headers["idempotent-replayed"] == "true", "\(userAgain.status) \(String(decoding: userAgain.body, as: UTF8.self))")
            let serialKey = ["Idempotency-Key": "serial-\(UUID())"]
            let client = try await stack.accessToken(appA)
            let serial = try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: client, json: ["authMode": "0x42"], headers: serialKey)
            let serialAgain = try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: client, json: ["authMode": "0x42"], headers: serialKey)
            #expect(serial.status == 200)
            #expect(serial.string("bizSerialNum") != nil)
            #expect(serialAgain.body == serial.body)
            let stored = try await stack.database.pool.query("SELECT response_sealed FROM idempotent_requests WHERE status IS NOT NULL")
            let secret = Array(try #require(made.string("appSecret")).utf8)
            #expect(stored.rows.count >= 4)
            for row in stored.rows {
                let sealed = try row.decode("response_sealed", as: [UInt8].self)
                #expect(!sealed.indices.contains { sealed[$0...].starts(with: secret) })
            }
        }
    }
}
