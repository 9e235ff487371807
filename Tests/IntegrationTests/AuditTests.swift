import FaceGateCore
import Foundation
import PostgresClient
import Testing

/// Transactions, auditors, tenant isolation, and the public API's own documents and error envelopes.
@Suite(.serialized) struct AuditTests {
    @Test func everyCallIsRecordedChainedAndTamperEvident() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let other = try await stack.createApp()
            let token = try await stack.accessToken(app)
            // Three recorded calls: a user creation, a refused login (no matcher needed: not an image), another user.
            _ = try await stack.createUser(app, employeeNumber: "A1", name: "Ann")
            let refused = try await stack.faceLogin(token, device: "dev-1", image: Data("not an image".utf8))
            #expect(refused.errorCode == "IMAGE_FORMAT_ERROR")
            let refusedId = try #require((refused.json["error"] as? [String: Any])?["transactionId"] as? String)
            _ = try await stack.createUser(app, employeeNumber: "A2", name: "Bob")
            _ = try await stack.createUser(other, employeeNumber: "B1", name: "Eve")

            let auditor = try await stack.call("POST", "/v1/auditors", bearer: stack.adminKey, json: ["name": "audit A", "appIds": [app.id]])
            #expect(auditor.status == 201)
            let auditorKey = try #require(auditor.string("auditorKey"))

            let page = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&limit=2", bearer: auditorKey)
            #expect(page.status == 200)
            let items = page.json["items"] as? [[String: Any]] ?? []
            #expect(items.count == 2)
            let cursor = try #require(page.string("nextCursor"))
            let rest = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&limit=2&cursor=\(cursor)", bearer: auditorKey)
            #expect((rest.json["items"] as? [[String: Any]])?.count == 1)

            let failures = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&outcome=IMAGE_FORMAT_ERROR&deviceId=dev-1", bearer: auditorKey)
            let failed = failures.json["items"] as? [[String: Any]] ?? []
            #expect(failed.count == 1)
            #expect(failed.first?["transactionId"] as? String == refusedId)
            #expect(failed.first?["kind"] as? String == "face.login")
            #expect(failed.first?["clientIp"] as? String == "127.0.0.1")

            // Scoped auditors see only their apps.
            let forbidden = try await stack.call("GET", "/v1/audit/transactions?appId=\(other.id)", bearer: auditorKey)
            #expect(forbidden.status == 403)
            let unscoped = try await stack.call("GET", "/v1/audit/transactions", bearer: auditorKey)
            #expect((unscoped.json["items"] as? [[String: Any]] ?? []).allSatisfy { $0["appId"] as? String == app.id })
            #expect(try await stack.call("GET", "/v1/audit/transactions", bearer: "fga_nonsense").status == 401)
            // Auditors cannot act as operators.
            #expect(try await stack.call("POST", "/v1/apps", bearer: auditorKey, json: ["name": "x"]).status == 401)

            let csv = try await stack.call("GET", "/v1/audit/transactions.csv?appId=\(app.id)", bearer: auditorKey)
            #expect(csv.status == 200)
            #expect(csv.headers["content-type"]?.hasPrefix("text/csv") == true)
            let lines = String(decoding: csv.body, as: UTF8.self).split(separator: "\r\n")
            #expect(lines.first == "transactionId,appId,kind,outcome,userId,deviceId,clientIp,score,latencyMs,createdAt")
            #expect(lines.count == 4)

            let verified = try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)", bearer: auditorKey)
            #expect(verified.json["ok"] as? Bool == true)
            #expect(verified.json["checked"] as? Int == 3)
            #expect(verified.json["firstBrokenTransactionId"] is NSNull, "present as null when the chain is intact")
            #expect(failed.first?["userId"] is NSNull, "absent values are null, not missing")

            // An edit by hand (as a superuser could) is caught at the row.
            _ = try await stack.database.pool.query("UPDATE transactions SET outcome = 'SUCCESS' WHERE id = \(UUID(uuidString: refusedId)!)")
            let broken = try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)", bearer: auditorKey)
            #expect(broken.json["ok"] as? Bool == false)
            #expect(broken.json["firstBrokenTransactionId"] as? String == refusedId)
        }
    }

    /// Every service's own login may read and append to the trail, and nothing else.
    @Test func noServiceLoginCanChangeTheAuditTrail() async throws {
        let database = try await TestDatabase.create()
        do {
            for (service, _) in Schema.serviceLogins {
                let pool = PostgresPool(configuration: try PostgresConfiguration(url: database.url(for: service)))
                #expect(try await pool.query("SELECT count(*)::int AS n FROM transactions").first?.decode("n", as: Int.self) == 0)
                for statement in ["UPDATE transactions SET outcome = 'TAMPERED'", "DELETE FROM transactions", "TRUNCATE transactions",
                                  "ALTER TABLE transactions DISABLE ROW LEVEL SECURITY", "DROP TABLE transactions", "SET ROLE facegate_owner"] {
                    do {
                        _ = try await pool.query(PostgresQuery(unsafeSQL: statement))
                        Issue.record("\(service): \(statement) was allowed")
                    } catch let error as PostgresError {
                        #expect(error.sqlState == "42501", "\(service): \(statement): \(error)")
                    }
                }
                await pool.close()
            }
        } catch {
            await database.drop()
            throw error
        }
        await database.drop()
    }

    @Test func operatorsManageUsersWithPagesAndConflicts() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp(formal: false)
            let created = try await stack.call("GET", "/v1/apps/\(app.id)", bearer: stack.adminKey)
            #expect((created.json["modules"] as? [String: String])?["faceLogin"] == "trial")
            for index in 1...5 { _ = try await stack.createUser(app, employeeNumber: "N\(index)", name: "User \(index)") }
            let conflict = try await stack.call("POST", "/v1/apps/\(app.id)/users", bearer: stack.adminKey, json: ["employeeNumber": "N1", "name": "Again"])
            #expect(conflict.status == 409)
            #expect(conflict.errorCode == "CONFLICT")
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await stack.call("GET", "/v1/apps/\(app.id)/users?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), bearer: stack.adminKey)
                seen += (page.json["items"] as? [[String: Any]] ?? []).compactMap { $0["employeeNumber"] as? String }
                cursor = page.string("nextCursor")
            } while cursor != nil
            #expect(seen == ["N1", "N2", "N3", "N4", "N5"])
            let badCursor = try await stack.call("GET", "/v1/apps/\(app.id)/users?cursor=zzz", bearer: stack.adminKey)
            #expect(badCursor.status == 400)

            // Tenant isolation: another app's id in the path finds nothing of this app.
            let other = try await stack.createApp()
            let userId = try await stack.createUser(app, employeeNumber: "N6", name: "Six")
            #expect(try await stack.call("GET", "/v1/apps/\(other.id)/users/\(userId)", bearer: stack.adminKey).status == 404)
            #expect(try await stack.call("DELETE", "/v1/apps/\(other.id)/users/\(userId)", bearer: stack.adminKey).status == 404)
            #expect(try await stack.call("GET", "/v1/apps/\(app.id)/users/\(userId)", bearer: stack.adminKey).status == 200)

            // Secret rotation: new secret works, the old one during the grace period.
            let rotated = try await stack.call("POST", "/v1/apps/\(app.id)/secret", bearer: stack.adminKey)
            let newSecret = try #require(rotated.string("appSecret"))
            #expect(try await stack.call("POST", "/v1/access-tokens", basic: (app.id, newSecret)).status == 200)
            #expect(try await stack.call("POST", "/v1/access-tokens", basic: (app.id, app.secret)).status == 200)
        }
    }

    @Test func badRequestsGetTheErrorEnvelope() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_MAX_BODY_BYTES": "100000"]) { stack in
            let malformed = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, body: Data("{\"name\": ".utf8), contentType: "application/json")
            #expect(malformed.status == 400)
            #expect(malformed.errorCode == "INVALID_REQUEST")
            let missingField = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["nom": "x"])
            #expect(missingField.status == 400)
            let app = try await stack.createApp()
            let token = try await stack.accessToken(app)
            let huge = try await stack.faceLogin(token, device: "d", image: Data(repeating: 0xFF, count: 200_000))
            #expect(huge.status == 413)
            #expect(huge.errorCode == "PAYLOAD_TOO_LARGE")
            let noDevice = try await stack.call("POST", "/v1/face-login", bearer: token, body: Data([0xFF, 0xD8, 0xFF, 0xE0]), contentType: "image/jpeg")
            #expect(noDevice.status == 400)
            #expect(try await stack.call("GET", "/v1/nowhere").status == 404)
            #expect(try await stack.call("POST", "/v1/apps").status == 401)
        }
    }

    @Test func openAPIDescribesExactlyTheServedRoutes() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let document = try await stack.call("GET", "/openapi.json")
            #expect(document.status == 200)
            #expect(document.string("openapi") == "3.1.0")
            let paths = document.json["paths"] as? [String: [String: Any]] ?? [:]
            var documented = Set<String>()
            for (path, operations) in paths {
                for method in operations.keys where ["get", "post", "put", "patch", "delete"].contains(method) {
                    documented.insert("\(method.uppercased()) \(path)")
                }
            }
            let served = Set(stack.gateway.routes.map { "\($0.method) \($0.pattern)" })
            #expect(documented == served, "only documented: \(documented.subtracting(served)), only served: \(served.subtracting(documented))")
        }
    }
}
