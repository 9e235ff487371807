import AuditRecords
import FaceGateCore
import FaceGateSchema
import FaceGateTestSupport
import Foundation
import PostgresClient
import ServiceKit
import Testing

/// Transactions, auditors, tenant isolation, and the public API's own documents and error envelopes.
@Suite(.serialized, .sharedStack(withMatcher: false)) struct AuditTests {
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
            #expect(lines.first == "transactionId,appId,kind,outcome,userId,deviceId,clientIp,score,latencyMs,createdAt,actorType,actorId,change,detail")
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

    /// A database-level attacker (the schema owner here) rewrites the trail as well as it can without the
    /// services' audit key: edits and re-hashes rows, downgrades them to plain SHA-256, removes the tail and
    /// rewinds the head, deletes an app's whole trail. Verification, with a checkpoint kept outside the
    /// database, catches each one.
    @Test func aDatabaseLevelAttackerCannotRewriteTheTrail() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let appId = try #require(UUID(uuidString: app.id))
            for number in 1...3 { _ = try await stack.createUser(app, employeeNumber: "T\(number)", name: "User \(number)") }
            let owner = stack.database.pool
            func verify(_ checkpoint: String? = nil) async throws -> [String: Any] {
                try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)" + (checkpoint.map { "&checkpoint=\($0)" } ?? ""),
                                     bearer: stack.adminKey).json
            }
            let kept = try await stack.call("GET", "/v1/audit/checkpoint?appId=\(app.id)", bearer: stack.adminKey)
            #expect(kept.json["count"] as? Int == 3)
            let checkpoint = try #require(kept.string("checkpoint"))
            #expect((try await verify(checkpoint)["checkpoint"] as? [String: Any])?["ok"] as? Bool == true)
            #expect(try await verify(checkpoint)["ok"] as? Bool == true)

            // Rows as the attacker reads them, re-chained after an edit with whatever hash they can compute.
            func rechain(_ edit: (inout TransactionRecord) -> Void, keyId: String?) async throws {
                let rows = try await owner.query("""
                    SELECT id, app_id, chain_seq, kind, outcome, user_id, device_id, client_ip, score, latency_ms, detail::text AS detail, created_at
                    FROM transactions WHERE app_id = \(appId) ORDER BY chain_seq
                    """)
                var previous = TransactionRecord.genesisHash
                for row in rows.rows {
                    var record = try TransactionLog.record(from: row)
                    let seq = try row.decode("chain_seq", as: Int64.self)
                    if seq == 2 { edit(&record) }
                    let hash = record.rowHash(previousHash: previous, chainSeq: seq, key: nil)
                    _ = try await owner.query("""
                        UPDATE transactions SET outcome = \(record.outcome), prev_hash = \(previous), row_hash = \(hash), hash_key_id = \(keyId)
                        WHERE id = \(record.id)
                        """)
                    previous = hash
                }
                _ = try await owner.query("UPDATE transaction_chain_heads SET last_hash = \(previous) WHERE app_id = \(appId)")
            }
            let original = try await owner.query("SELECT outcome, row_hash, prev_hash, hash_key_id FROM transactions WHERE app_id = \(appId) ORDER BY chain_seq")
            #expect(try original.rows.allSatisfy { try $0.decode("hash_key_id", as: String?.self) != nil }, "new rows are keyed")
            for keyId in [try original.rows[0].decode("hash_key_id", as: String?.self), nil] {
                try await rechain({ $0.outcome = "FORGED" }, keyId: keyId)
                let caught = try await verify()
                #expect(caught["ok"] as? Bool == false, "re-hashed with \(keyId == nil ? "plain SHA-256" : "a guess at the key")")
            }
            // Put the genuine rows back, then remove the tail and rewind the head as if it never existed.
            for (index, row) in original.rows.enumerated() {
                _ = try await owner.query("""
                    UPDATE transactions SET outcome = \(try row.decode("outcome", as: String.self)), prev_hash = \(try row.decode("prev_hash", as: [UInt8].self)),
                           row_hash = \(try row.decode("row_hash", as: [UInt8].self)), hash_key_id = \(try row.decode("hash_key_id", as: String?.self))
                    WHERE app_id = \(appId) AND chain_seq = \(index + 1)
                    """)
            }
            let head = try original.rows[2].decode("row_hash", as: [UInt8].self)
            _ = try await owner.query("UPDATE transaction_chain_heads SET last_hash = \(head) WHERE app_id = \(appId)")
            #expect(try await verify(checkpoint)["ok"] as? Bool == true)
            _ = try await owner.query("DELETE FROM transactions WHERE app_id = \(appId) AND chain_seq = 3")
            _ = try await owner.query("""
                UPDATE transaction_chain_heads SET last_seq = 2, last_hash = \(try original.rows[1].decode("row_hash", as: [UInt8].self)) WHERE app_id = \(appId)
                """)
            #expect(try await verify()["ok"] as? Bool == true, "consistent on its own")
            let tail = try await verify(checkpoint)
            #expect(tail["ok"] as? Bool == false)
            #expect((tail["checkpoint"] as? [String: Any])?["ok"] as? Bool == false)
            // Everything of the app, chain head included.
            _ = try await owner.query("DELETE FROM transactions WHERE app_id = \(appId)")
            _ = try await owner.query("DELETE FROM transaction_chain_heads WHERE app_id = \(appId)")
            #expect(try await verify()["ok"] as? Bool == true, "an empty trail is consistent on its own")
            #expect(try await verify(checkpoint)["ok"] as? Bool == false)

            // A checkpoint of another app, or one not signed by the platform, is refused.
            let other = try await stack.createApp()
            let foreign = try #require(try await stack.call("GET", "/v1/audit/checkpoint?appId=\(other.id)", bearer: stack.adminKey).string("checkpoint"))
            #expect(try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)&checkpoint=\(foreign)", bearer: stack.adminKey).errorCode == "INVALID_REQUEST")
            let parts = checkpoint.split(separator: ".")
            let resigned = parts[0] + "." + parts[1] + "." + String(parts[2].reversed())
            #expect(try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)&checkpoint=\(resigned)", bearer: stack.adminKey).status == 400)
        }
    }

    /// Every service login may append to the trail and read it (the matcher not even that), never change it, and touches
    /// only the tables its own service uses.
    @Test func noServiceLoginCanChangeTheAuditTrail() async throws {
        let database = try await TestDatabase.create()
        do {
            // Each login may touch only its own service's tables (the matcher does not even read the trail).
            let foreign: [String: [String]] = [
                "auth-gateway": ["INSERT INTO face_templates (id) VALUES (gen_random_uuid())", "SELECT * FROM processed_messages",
                                 "SELECT * FROM ctid_registry", "UPDATE kiosk_sessions SET state = 'x'", "DELETE FROM transaction_chain_heads"],
                "matcher-worker": ["SELECT * FROM api_keys", "SELECT * FROM transactions", "INSERT INTO users (id) VALUES (gen_random_uuid())",
                                   "SELECT * FROM device_credentials", "UPDATE apps SET name = 'x'", "DELETE FROM face_templates"],
                "ctid-verifier": ["SELECT * FROM users", "SELECT * FROM face_templates", "SELECT * FROM api_keys", "SELECT * FROM kiosk_sessions"],
                "kiosk-orchestrator": ["SELECT * FROM api_keys", "SELECT * FROM device_credentials", "INSERT INTO face_templates (id) VALUES (gen_random_uuid())",
                                       "SELECT * FROM ctid_registry", "UPDATE apps SET name = 'x'"],
            ]
            for (service, _) in Schema.serviceLogins {
                let pool = PostgresPool(configuration: try PostgresConfiguration(url: database.url(for: service)))
                if service != "matcher-worker" {
                    #expect(try await pool.query("SELECT count(*)::int AS n FROM transactions").first?.decode("n", as: Int.self) == 0)
                }
                for statement in ["UPDATE transactions SET outcome = 'TAMPERED'", "DELETE FROM transactions", "TRUNCATE transactions",
                                  "ALTER TABLE transactions DISABLE ROW LEVEL SECURITY", "DROP TABLE transactions", "SET ROLE facegate_owner"]
                    + foreign[service, default: []] {
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

    /// Row-level security is FORCEd and keyed by `SET LOCAL facegate.app_id`: a service login sees nothing until it
    /// names an app, then only that app's rows; it cannot write a row of another app, and the every-app scope reads
    /// but does not write. The schema owner is held too.
    @Test func eachServiceLoginSeesOnlyTheAppItNames() async throws {
        try await TestStack.with(withMatcher: false, fresh: true) { stack in  // counts rows across apps
            let (mine, theirs) = (try await stack.createApp(), try await stack.createApp())
            _ = try await stack.createUser(mine, employeeNumber: "M1", name: "Mine")
            _ = try await stack.createUser(theirs, employeeNumber: "T1", name: "Theirs")
            let (myId, theirId) = (UUID(uuidString: mine.id)!, UUID(uuidString: theirs.id)!)
            func count(_ pool: PostgresPool, _ table: String, app: UUID? = nil) async throws -> Int {
                let filter = app.map { " WHERE app_id = '\($0.uuidString.lowercased())'" } ?? ""
                return try await pool.query(PostgresQuery(unsafeSQL: "SELECT count(*)::int AS n FROM \(table)\(filter)")).first!.decode("n", as: Int.self)
            }
            func expectRefused(_ pool: PostgresPool, _ statement: PostgresQuery, _ what: String) async throws {
                do {
                    _ = try await pool.query(statement)
                    Issue.record("\(what) was allowed")
                } catch let error as PostgresError {
                    #expect(error.sqlState == "42501", "\(what): \(error)")
                }
            }
            for service in ["auth-gateway", "kiosk-orchestrator"] {
                let pool = PostgresPool(configuration: try PostgresConfiguration(url: stack.database.url(for: service)))
                #expect(try await count(pool, "users") == 0, "\(service): nothing is visible before an app is named")
                try await Tenant.run(app: myId) {
                    #expect(try await count(pool, "users") == 1, "\(service)")
                    #expect(try await count(pool, "users", app: theirId) == 0, "\(service): another app's rows")
                    try await expectRefused(pool, "INSERT INTO users (id, app_id, employee_number, name) VALUES (\(UUID()), \(theirId), 'X1', 'Planted')",
                                            "\(service): a row of another app")
                }
                try await Tenant.acrossApps {
                    #expect(try await count(pool, "users") == 2, "\(service): the every-app scope reads")
                    try await expectRefused(pool, "INSERT INTO users (id, app_id, employee_number, name) VALUES (\(UUID()), \(theirId), 'X2', 'Planted')",
                                            "\(service): a write in the every-app scope")
                }
                await pool.close()
            }
            var ownerConfiguration = try PostgresConfiguration(url: stack.database.url)
            ownerConfiguration.sessionSettings = [:]
            let owner = PostgresPool(configuration: ownerConfiguration)
            #expect(try await count(owner, "users") == 0, "the schema owner is held by FORCEd row-level security")
            #expect(try await count(owner, "transactions") == 0)
            await owner.close()
        }
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

    @Test func administrativeRowsNameWhoActedAndWhatChanged() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let created = try await stack.call("POST", "/v1/operator-keys", bearer: stack.adminKey, json: ["name": "ops", "appIds": [app.id]])
            let (keyId, key) = (try #require(created.string("operatorKeyId")), try #require(created.string("operatorKey")))
            let patched = try await stack.call("PATCH", "/v1/apps/\(app.id)", bearer: key, json: ["matchThreshold": 0.95, "modules": ["ctid": "disabled"]])
            #expect(patched.status == 200, "\(patched.json)")
            _ = try await stack.call("DELETE", "/v1/operator-keys/\(keyId)", bearer: stack.adminKey)
            _ = try await stack.faceLogin(try await stack.accessToken(app), device: "dev-actor", image: Data("not an image".utf8))

            func rows(_ query: String) async throws -> [[String: Any]] {
                try await stack.call("GET", "/v1/audit/transactions?" + query, bearer: stack.adminKey).json["items"] as? [[String: Any]] ?? []
            }
            func actor(_ row: [String: Any]?) -> [String: String]? { row?["actor"] as? [String: String] }
            let update = try #require(try await rows("appId=\(app.id)&kind=app.update").first)
            #expect(actor(update) == ["type": "operator", "id": keyId])
            let change = try #require(update["change"] as? [String: [Any]], "\(update)")
            #expect(change["modules.ctid"] as? [String] == ["formal", "disabled"], "\(change)")
            #expect((change["matchThreshold"]?.last as? Double).map { abs($0 - 0.95) < 1e-6 } == true, "\(change)")
            #expect(change.count == 2, "what did not change is not named: \(change)")
            let revoke = try #require(try await rows("kind=operator-key.revoke&limit=100").first { ($0["detail"] as? [String: String])?["keyId"] == keyId })
            #expect(actor(revoke) == ["type": "operator", "id": "bootstrap"])
            #expect(actor(try await rows("appId=\(app.id)&deviceId=dev-actor").first) == ["type": "client", "id": "dev-actor"])
        }
    }

    @Test func aRefusedCredentialThatNamesAnExistingAppIsOnThatAppsChain() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let created = try await stack.call("POST", "/v1/auditors", bearer: stack.adminKey, json: ["name": "app's own", "appIds": [app.id]])
            let auditorKey = try #require(created.string("auditorKey"))
            let wrong = try await stack.call("POST", "/v1/access-tokens", basic: (app.id, "fgs_wrong"))
            #expect(wrong.status == 401)
            let refusal = try #require((wrong.json["error"] as? [String: Any])?["transactionId"] as? String)
            let unknown = try await stack.call("POST", "/v1/access-tokens", basic: (UUID().uuidString.lowercased(), "fgs_wrong"))
            let stranger = try #require((unknown.json["error"] as? [String: Any])?["transactionId"] as? String)

            // The app's own auditor reads the refusal on the app's chain; a made-up app id's refusal is on the platform chain.
            let rows = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=auth.refused", bearer: auditorKey)
            let items = rows.json["items"] as? [[String: Any]] ?? []
            #expect(items.contains { $0["transactionId"] as? String == refusal && $0["outcome"] as? String == "UNAUTHORIZED" }, "\(rows.json)")
            #expect(!items.contains { $0["transactionId"] as? String == stranger })
            let platform = try await stack.call("GET", "/v1/audit/transactions?appId=\(platformAppId.uuidString.lowercased())&kind=auth.refused&limit=1000",
                                                bearer: stack.adminKey)
            #expect((platform.json["items"] as? [[String: Any]] ?? []).contains { $0["transactionId"] as? String == stranger })
            #expect(try await stack.call("GET", "/v1/audit/verify?appId=\(app.id)", bearer: auditorKey).json["ok"] as? Bool == true)

            // The auditor's tools name its apps: exactly the apps the key reads.
            let named = try await stack.call("GET", "/v1/audit/apps", bearer: auditorKey).json["items"] as? [[String: String]]
            #expect(named?.map { $0["appId"] } == [app.id] && named?.first?["name"]?.hasPrefix("app ") == true, "\(String(describing: named))")
            let all = try await stack.call("GET", "/v1/audit/apps", bearer: stack.adminKey).json["items"] as? [[String: String]] ?? []
            #expect(all.contains { $0["appId"] == app.id } && all.count >= 1)
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
