import CTIDRecords
import CTIDVerifier
import Crypto
import FaceGateCLI
import FaceGateCore
import FaceGateTestSupport
import Foundation
import PostgresClient
import ServiceKit
import Testing

/// The operator's command line against a running gateway: help never acts, bad options stop with
/// exit 2 before any call.
@Suite(.serialized) struct CLITests {
    @Test func helpVersionAndBadOptionsChangeNothing() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let environment = Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])
            func apps() async throws -> [[String: Any]] {
                try #require(try await stack.call("GET", "/v1/apps", bearer: stack.adminKey).json["items"] as? [[String: Any]])
            }
            let before = try await apps().count
            #expect(await FaceGateCLI.run(["app", "create", "--help"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["--version"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["app", "create", "--formal"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "create", "bad", "--threshold", "abc"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "create", "bad", "--threshold"], environment: environment) == 2)
            #expect(try await apps().count == before)

            #expect(await FaceGateCLI.run(["app", "create", "legacy", "--binding", "header", "--threshold", "0.9"], environment: environment) == 0)
            let legacy = try #require(try await apps().first { $0["name"] as? String == "legacy" })
            #expect(legacy["deviceBinding"] as? String == "header")
            #expect(abs((legacy["matchThreshold"] as? Double ?? 0) - 0.9) < 1e-6)
            let id = try #require(legacy["appId"] as? String)
            #expect(await FaceGateCLI.run(["app", "binding", id, "dpop", "boundDevice"], environment: environment) == 0)
            let patched = try await stack.call("GET", "/v1/apps/\(id)", bearer: stack.adminKey)
            #expect(patched.string("deviceBinding") == "dpop" && patched.string("deviceBindingPolicy") == "boundDevice")
            #expect(await FaceGateCLI.run(["app", "binding", id, "sideways"], environment: environment) == 1)
            // An operating point as an FPIR over a gallery: 1 % over 10,000 templates is SFace's threshold at about 1e-6.
            #expect(await FaceGateCLI.run(["app", "settings", id, "--for-gallery-size", "10000"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "settings", id, "--fpir", "2"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "settings", id, "--fpir", "0.01", "--for-gallery-size", "10000"], environment: environment) == 0)
            let sized = try await stack.call("GET", "/v1/apps/\(id)", bearer: stack.adminKey)
            #expect(abs((sized.json["matchThreshold"] as? Double ?? 0) - 0.978) < 1e-3)
            #expect(sized.json["galleryTemplates"] as? Int == 0 && sized.json["estimatedFalsePositiveIdentificationRate"] as? Double == 0)
            // A misspelt module or state stops before any call (2); the API refuses one too, and nothing changes.
            let audited = try await stack.call("GET", "/v1/audit/transactions?appId=\(id)&kind=app.update&limit=100", bearer: stack.adminKey)
                .json["items"] as? [Any]
            #expect(await FaceGateCLI.run(["app", "modules", id, "faceLogn=formal"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "modules", id, "faceLogin=formall"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "modules", id], environment: environment) == 2)
            let misspelt = try await stack.call("PATCH", "/v1/apps/\(id)", bearer: stack.adminKey, json: ["modules": ["faceLogn": "formal"]])
            #expect(misspelt.status == 400 && misspelt.errorCode == "INVALID_REQUEST")
            #expect(misspelt.errorMessage?.contains("modules.faceLogn") == true && misspelt.errorMessage?.contains("faceLogin") == true)
            #expect((try await stack.call("GET", "/v1/audit/transactions?appId=\(id)&kind=app.update&limit=100", bearer: stack.adminKey)
                .json["items"] as? [Any])?.count == audited?.count)
            #expect(await FaceGateCLI.run(["app", "modules", id, "faceLogin=trial"], environment: environment) == 0)
            #expect(((try await stack.call("GET", "/v1/apps/\(id)", bearer: stack.adminKey).json["modules"]) as? [String: Any])?["faceLogin"] as? String == "trial")
            #expect(await FaceGateCLI.run(["user", "list", id], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["audit", "export", "appId=\(id)"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["audit", "export", "appId=not-a-uuid"], environment: environment) == 1)
        }
    }

    @Test func unknownOptionsFiltersAndArgumentsStopAndOutputIsATableOrSortedJSON() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let environment = Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "T1", name: "Tabled Person")
            for arguments in [["app", "list", "--bogus"], ["app", "frobnicate"], ["face", "list", app.id], ["user", "get", app.id, user, "extra"],
                              ["audit", "query", "bogus=1"], ["app", "list", "--output", "yaml"], ["face", "search", app.id, "x.jpg", "--limit", "0"],
                              ["app", "settings", app.id], ["app", "settings", app.id, "--liveness-login", "sometimes"], ["app", "delete", app.id]] {
                #expect(await FaceGateCLI.run(arguments, environment: environment) == 2, "\(arguments)")
            }
            #expect(try await stack.call("GET", "/v1/apps/\(app.id)", bearer: stack.adminKey).status == 200, "delete without --yes deletes nothing")

            // Settings: what is named changes, the other half of a whole-object setting is kept.
            #expect(await FaceGateCLI.run(["app", "settings", app.id, "--threshold", "0.95", "--daily-calls", "7", "--liveness-login", "active"],
                                          environment: environment) == 0)
            let changed = try await stack.call("GET", "/v1/apps/\(app.id)", bearer: stack.adminKey).json
            #expect(abs((changed["matchThreshold"] as? Double ?? 0) - 0.95) < 1e-6)
            #expect((changed["quotas"] as? [String: Int]) == ["dailyCalls": 7, "gallerySize": 100])
            #expect((changed["liveness"] as? [String: String]) == ["faceLogin": "active", "kiosk": "active"])
            #expect(await FaceGateCLI.run(["user", "reset", app.id, user], environment: environment) == 0)

            let bin = try TestEnvironment.value("FACEGATE_BIN_DIR") + "/facegate"
            func facegate(_ arguments: [String]) throws -> ChildProcess.Output {
                try ChildProcess.run("/usr/bin/env", ["FACEGATE_URL=\(stack.baseURL)", "FACEGATE_ADMIN_KEY=\(stack.adminKey)", bin] + arguments)
            }
            // Piped, JSON on one line with sorted keys; asked for, a table: a header row of the fields, then one row each.
            let piped = String(decoding: try facegate(["user", "get", app.id, user]).output, as: UTF8.self)
            #expect(piped.hasPrefix(#"{"createdAt":"#) && piped.contains(#""name":"Tabled Person""#) && piped.hasSuffix("}\n"), "\(piped)")
            let single = String(decoding: try facegate(["user", "get", app.id, user, "--output", "table"]).output, as: UTF8.self)
            #expect(single.split(separator: "\n").contains { $0.hasPrefix("name") && $0.hasSuffix("Tabled Person") }, "\(single)")
            let listed = String(decoding: try facegate(["--output", "table", "user", "list", app.id]).output, as: UTF8.self).split(separator: "\n")
            #expect(listed.first?.hasPrefix("userId") == true && listed.first?.contains("employeeNumber") == true, "\(listed)")
            #expect(listed.count == 2 && listed[1].hasPrefix(user) && listed[1].contains("Tabled Person"), "\(listed)")

            // A refused call: one line on stderr; asked for JSON, the API's error envelope on stdout as well.
            let refused = try facegate(["user", "get", app.id, UUID().uuidString.lowercased(), "--output", "json"])
            #expect(refused.exitCode == 1 && refused.errorText.hasPrefix("facegate: GET /v1/apps/") && refused.errorText.contains("404 NOT_FOUND"))
            let envelope = try JSONSerialization.jsonObject(with: refused.output) as? [String: Any]
            #expect((envelope?["error"] as? [String: Any])?["code"] as? String == "NOT_FOUND", "\(String(decoding: refused.output, as: UTF8.self))")
            #expect(try facegate(["user", "get", app.id, UUID().uuidString.lowercased()]).output.isEmpty, "not asked: stdout stays empty")

            // Deleting, with --yes.
            #expect(await FaceGateCLI.run(["app", "delete", app.id, "--yes"], environment: environment) == 0)
            #expect(try await stack.call("GET", "/v1/apps/\(app.id)", bearer: stack.adminKey).status == 404)
        }
    }

    @Test func aFolderOfPeopleIsImportedAndARerunResumesWithoutDuplicates() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp()
            let images = try TestEnvironment.value("FACEGATE_TEST_IMAGES")
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let people = root.appendingPathComponent("people")
            for (folder, photo) in [("E2001 Barack Obama", "obama.jpg"), ("E2002 Joe Biden", "biden.jpg"), ("E2003 Nobody", nil), ("E2004", nil)] {
                let directory = people.appendingPathComponent(folder)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                if let photo { try FileManager.default.copyItem(atPath: images + "/" + photo, toPath: directory.appendingPathComponent(photo).path) }
            }
            try IDCard.runConvert(["-size", "320x240", "xc:#8899aa", people.appendingPathComponent("E2003 Nobody/blank.png").path])
            let report = root.appendingPathComponent("report.csv").path
            let bin = try TestEnvironment.value("FACEGATE_BIN_DIR") + "/facegate"
            func run(_ source: String) throws -> ChildProcess.Output {
                try ChildProcess.run("/usr/bin/env", ["FACEGATE_URL=\(stack.baseURL)", "FACEGATE_ADMIN_KEY=\(stack.adminKey)", bin, "user", "import",
                                                      app.id, source, "--concurrency", "3", "--report", report])
            }
            func users() async throws -> [String: Int] {
                let items = try await stack.call("GET", "/v1/apps/\(app.id)/users", bearer: stack.adminKey).json["items"] as? [[String: Any]] ?? []
                return Dictionary(uniqueKeysWithValues: items.map { ($0["employeeNumber"] as! String, $0["faces"] as! Int) })
            }

            let first = try run(people.path)
            #expect(first.exitCode == 1, "a refused photo ends in 1: \(first.errorText)")
            let log = first.errorText
            #expect(log.contains("4/4") && log.contains("E2001: enrolled"), "a plain line per person when not on a terminal: \(log)")
            #expect(log.contains("NO_FACE (1):") && log.contains("blank.png") && log.contains("NO_PHOTO (1):"), "\(log)")
            #expect(try await users() == ["E2001": 1, "E2002": 1, "E2003": 0], "a person without photos gets no user")
            let rows = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
            #expect(rows.first == "employeeNumber,photo,result,message" && rows.count == 5, "\(rows)")

            // Run again after an interruption: the imported are skipped, nothing is enrolled twice.
            let again = try run(people.path)
            #expect(again.errorText.contains("2 skipped") && again.errorText.contains("NO_FACE (1):"), "\(again.errorText)")
            #expect(try await users() == ["E2001": 1, "E2002": 1, "E2003": 0])

            // A CSV names people and photos; Obama's other photo under another number is refused as his duplicate.
            let csv = root.appendingPathComponent("people.csv")
            try Data("employeeNumber,name,photo\nE2005,Someone Else,\(images)/obama2.jpg\n".utf8).write(to: csv)
            let duplicate = try run(csv.path)
            #expect(duplicate.exitCode == 1 && duplicate.errorText.contains("DUPLICATE_FACE (1):"), "\(duplicate.errorText)")
            #expect(await FaceGateCLI.run(["user", "import", app.id, root.appendingPathComponent("missing").path],
                                          environment: Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])) == 2)
        }
    }

    /// A person with more photos than the app keeps templates: once the limit answers, the rest are not sent (each would
    /// cost a call and a matcher job to refuse), and the report says so.
    @Test func photosPastTheTemplateLimitAreNotSent() async throws {
        try await TestStack.with(extra: ["FACEGATE_MAX_FACES_PER_USER": "1"]) { stack in
            let app = try await stack.createApp()
            let images = try TestEnvironment.value("FACEGATE_TEST_IMAGES")
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let person = root.appendingPathComponent("people/E3001 Barack Obama")
            try FileManager.default.createDirectory(at: person, withIntermediateDirectories: true)
            for photo in ["obama.jpg", "obama2.jpg", "obama3.jpg"] {
                try FileManager.default.copyItem(atPath: images + "/" + photo, toPath: person.appendingPathComponent(photo).path)
            }
            let report = root.appendingPathComponent("report.csv").path
            let bin = try TestEnvironment.value("FACEGATE_BIN_DIR") + "/facegate"
            let run = try ChildProcess.run("/usr/bin/env", ["FACEGATE_URL=\(stack.baseURL)", "FACEGATE_ADMIN_KEY=\(stack.adminKey)", bin, "user", "import",
                                                            app.id, root.appendingPathComponent("people").path, "--report", report])
            #expect(run.exitCode == 1, "\(run.errorText)")
            let rows = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n").dropFirst().map { $0.split(separator: ",").map(String.init) }
            #expect(rows.map { $0[2] } == ["enrolled", "FACE_LIMIT_REACHED", "FACE_LIMIT_REACHED"], "\(rows)")
            #expect(rows.last?.last?.hasPrefix("not sent") == true, "\(rows)")
            let calls = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=face.enroll", bearer: stack.adminKey).json["items"] as? [[String: Any]]
            #expect(calls?.compactMap { $0["outcome"] as? String }.sorted() == ["FACE_LIMIT_REACHED", "SUCCESS"],
                    "the first photo enrolled, the second refused at the limit, the third never sent")
        }
    }

    @Test func operatorAndAuditorKeysFromTheCommandLine() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let environment = Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])
            let app = try await stack.createApp()
            func keys(_ path: String) async throws -> [[String: Any]] {
                try #require(try await stack.call("GET", path, bearer: stack.adminKey).json["items"] as? [[String: Any]])
            }
            #expect(await FaceGateCLI.run(["operator-key", "create", "team", app.id, "--expires", "2099-01-01T00:00:00Z"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["operator-key", "create", "team", "--expires", "next week"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["auditor", "create", "audit", app.id], environment: environment) == 0)
            // An auditor key given no app would read nothing: the CLI stops (2) before making one. (The API still makes it,
            // `{name}` alone being its documented request; such a key reads nothing.)
            #expect(await FaceGateCLI.run(["auditor", "create", "blind"], environment: environment) == 2)
            #expect(try await keys("/v1/auditors").count == 1)
            let created = try #require(try await keys("/v1/operator-keys").first)
            #expect(created["appIds"] as? [String] == [app.id])
            #expect((created["expiresAt"] as? String)?.hasPrefix("2099-01-01") == true)
            let auditor = try #require(try await keys("/v1/auditors").first?["auditorId"] as? String)
            #expect(await FaceGateCLI.run(["operator-key", "list"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["operator-key", "revoke", try #require(created["operatorKeyId"] as? String)], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["auditor", "revoke", auditor], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["auditor", "revoke", UUID().uuidString], environment: environment) == 1)
            #expect(try await keys("/v1/operator-keys").allSatisfy { $0["revokedAt"] is String })
            #expect(try await keys("/v1/auditors").allSatisfy { $0["revokedAt"] is String })
        }
    }

    /// A call that fails says why in one line on stderr, and nothing on stdout: a gateway nobody answers at is named (not
    /// a Foundation error dump), a refused key is an error code with what to check.
    @Test func failuresAreOneReadableLine() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let facegate = try TestEnvironment.value("FACEGATE_BIN_DIR") + "/facegate"
            func run(_ url: String, key: String) throws -> ChildProcess.Output {
                try ChildProcess.run("/usr/bin/env", ["FACEGATE_URL=\(url)", "FACEGATE_ADMIN_KEY=\(key)", facegate, "app", "list"])
            }
            let unreachable = try run("http://127.0.0.1:1", key: stack.adminKey)
            #expect(unreachable.exitCode == 1 && unreachable.output.isEmpty)
            #expect(unreachable.errorText == "facegate: cannot reach http://127.0.0.1:1: nothing answers there; is the gateway running, and is FACEGATE_URL right?\n")
            let refused = try run(stack.baseURL, key: "fgk_admin_wrong")
            #expect(refused.exitCode == 1 && refused.output.isEmpty)
            #expect(refused.errorText.hasPrefix("facegate: GET /v1/apps answered 401 UNAUTHORIZED"))
            #expect(refused.errorText.contains("the key was refused: wrong, revoked or expired"))
            #expect(refused.errorText.filter { $0 == "\n" }.count == 1)
            #expect(try run(stack.baseURL, key: stack.adminKey).exitCode == 0)
        }
    }

    /// `facegate keys` prints every key a service needs to start (the audit key and the operator key among them), each a
    /// fresh value, with its public halves and the operator key's SHA-256 matching.
    @Test func keysPrintsEveryKeyTheServicesNeed() throws {
        func generate() throws -> [String: String] {
            let run = try ChildProcess.run(try TestEnvironment.value("FACEGATE_BIN_DIR") + "/facegate", ["keys"])
            #expect(run.exitCode == 0, "\(run.errorText)")
            return LocalStackTests.assignments(String(decoding: run.output, as: UTF8.self))
        }
        let keys = try generate()
        let services = ["AUTH_GATEWAY", "MATCHER_WORKER", "CTID_VERIFIER", "KIOSK_ORCHESTRATOR"].map { "FACEGATE_SERVICE_KEY_\($0)" }
        #expect(Set(keys.keys) == Set(["FACEGATE_SIGNING_KEY", "FACEGATE_SEALING_KEY", "FACEGATE_CTID_PRIVATE_KEY", "FACEGATE_CTID_PUBLIC_KEY",
                                       "FACEGATE_SERVICE_PUBLIC_KEYS", "FACEGATE_KIOSK_SIGNING_KEY", "FACEGATE_KIOSK_PUBLIC_KEYS",
                                       "FACEGATE_AUDIT_KEY", "FACEGATE_ADMIN_KEY", "FACEGATE_ADMIN_KEY_SHA256"] + services))
        for name in ["FACEGATE_SIGNING_KEY", "FACEGATE_SEALING_KEY", "FACEGATE_AUDIT_KEY", "FACEGATE_KIOSK_SIGNING_KEY"] + services {
            #expect(Data(base64Encoded: keys[name] ?? "")?.count == 32, "\(name)")
        }
        let operatorKey = try #require(keys["FACEGATE_ADMIN_KEY"])
        #expect(operatorKey.hasPrefix("fgk_admin_") && keys["FACEGATE_ADMIN_KEY_SHA256"] == Hex.encode(SHA256.hash(operatorKey)))
        let kioskSeed = try #require(Data(base64Encoded: keys["FACEGATE_KIOSK_SIGNING_KEY"] ?? ""))
        #expect(Data(try Ed25519PrivateKey(seed: Array(kioskSeed)).publicKey.rawRepresentation).base64EncodedString()
                == keys["FACEGATE_KIOSK_PUBLIC_KEYS"])
        let again = try generate()
        #expect(keys.filter { again[$0.key] == $0.value }.isEmpty, "a value printed twice")
    }

    /// `enroll` with several photos tries every one: a file it cannot read does not stop the next, and the exit code says
    /// one was not enrolled.
    @Test func enrollTriesEveryPhotoAndNamesTheOnesRefused() async throws {
        try await TestStack.with { stack in
            let environment = Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "M1", name: "Barack Obama")
            let photo = try TestEnvironment.value("FACEGATE_TEST_IMAGES") + "/obama.jpg"
            #expect(await FaceGateCLI.run(["enroll", app.id, user, "/nonexistent/photo.jpg", photo], environment: environment) == 1)
            let faces = try await stack.call("GET", "/v1/apps/\(app.id)/users/\(user)/faces", bearer: stack.adminKey)
            #expect((faces.json["items"] as? [Any])?.count == 1)
        }
    }

    /// The sealing key is rotated while the stack runs: `facegate reseal` moves every template, kept enrollment photo and
    /// CTID registry row to the new key, after which a matcher holding only the new key still logs the user in and the registry still reads.
    @Test func resealMovesEverySealedValueToTheNewKey() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let oldKey = Array(Data(base64Encoded: stack.environment["FACEGATE_SEALING_KEY"]!)!)
            let newKey = SecureRandom.bytes(32)
            func matcher(_ name: String, _ keys: [String: String]) throws -> ServiceProcess {
                try ServiceProcess("matcher-worker", environment: stack.environment(for: "matcher-worker")
                    .merging(["FACEGATE_ADMIN_PORT": "0"].merging(keys) { $1 }) { $1 }, name: name)
            }
            let app = try await stack.createApp(extra: ["keepEnrollmentPhotos": true])
            let user = try await stack.createUser(app, employeeNumber: "R1", name: "Barack Obama")
            let appId = try #require(UUID(uuidString: app.id))
            let first = try matcher("matcher-old-key", [:])
            try await first.waitFor("all services started", timeout: .seconds(60))
            var enrolled = 0
            for _ in 0..<5 where enrolled != 201 {
                enrolled = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces?photoConsent=true", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama.jpg"), contentType: "image/jpeg").status
            }
            #expect(enrolled == 201)
            first.terminate()
            let registered = try PostgresIdentityRegistry(database: stack.database.pool, sealer: try Sealer(key: oldKey), numberKey: oldKey)
            let identity = RegisteredIdentity(name: "张三", validStart: "20200101", validEnd: "20400101", sealedTemplate: nil)
            try await Tenant.run(app: appId) { try await registered.register(appId: appId, number: "11010519491231002X", identity: identity) }

            let environment = Environment(["FACEGATE_DATABASE_URL": stack.database.url, "FACEGATE_SEALING_KEY": Data(newKey).base64EncodedString(),
                                           "FACEGATE_PREVIOUS_SEALING_KEYS": Data(oldKey).base64EncodedString()])
            #expect(await FaceGateCLI.run(["reseal"], environment: Environment(["FACEGATE_DATABASE_URL": stack.database.url,
                                                                                 "FACEGATE_SEALING_KEY": Data(newKey).base64EncodedString()])) == 1,
                    "without the old key nothing opens, and it says so")
            #expect(await FaceGateCLI.run(["reseal"], environment: environment) == 0)
            let template = try #require(try await stack.database.pool.query("SELECT id, embedding_sealed FROM face_templates").first)
            let (templateId, sealed): (UUID, [UInt8]) = (try template.decode("id"), try template.decode("embedding_sealed"))
            #expect((try? Sealer(key: newKey).openTemplate(sealed, templateId: templateId)) != nil)
            #expect((try? Sealer(key: oldKey).openTemplate(sealed, templateId: templateId)) == nil)
            let photo = try #require(try await stack.database.pool.query("SELECT photo_sealed FROM enrollment_photos").first?.decode("photo_sealed", as: [UInt8].self))
            #expect((try? Sealer(key: newKey).openEnrollmentPhoto(photo, templateId: templateId)) == Array(try TestEnvironment.image("obama.jpg")))
            let again = try await Resealer(database: stack.database.pool, sealer: try Sealer(key: newKey, previous: [oldKey])).run()
            #expect(again["face_templates"] == Resealer.Counts(checked: 1, resealed: 0))
            #expect(again["ctid_registry"] == Resealer.Counts(checked: 1, resealed: 0))
            #expect(again["enrollment_photos"] == Resealer.Counts(checked: 1, resealed: 0))

            // Only the new key from now on: the registry name opens (its number key pinned), and the matcher logs the user in.
            let rotated = try PostgresIdentityRegistry(database: stack.database.pool, sealer: try Sealer(key: newKey), numberKey: oldKey)
            #expect(try await Tenant.run(app: appId) { try await rotated.lookup(appId: appId, number: "11010519491231002X") }?.name == "张三")
            let second = try matcher("matcher-new-key", ["FACEGATE_SEALING_KEY": Data(newKey).base64EncodedString()])
            defer { second.terminate() }
            try await second.waitFor("all services started", timeout: .seconds(60))
            var searched = TestStack.Reply(status: 0, headers: [:], body: Data())
            for _ in 0..<5 where searched.status != 200 {
                searched = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama3.jpg"), contentType: "image/jpeg")
            }
            #expect(searched.string("outcome") == "MATCH", "\(searched.json)")
            #expect((searched.json["match"] as? [String: Any])?["userId"] as? String == user)
        }
    }
}
