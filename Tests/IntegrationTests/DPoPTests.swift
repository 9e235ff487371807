import Crypto
import FaceGateClient
import FaceGateCore
import Foundation
import JWT
@testable import MatcherWorker
import ServiceKit
import Testing

/// Device-bound face login (RFC 9449 DPoP) against a real stack: a victim's photo and device id are
/// worth nothing without the victim's device key, and a new key is bound only as the app's policy says.
@Suite(.serialized, .sharedStack()) struct DPoPTests {
    /// A device: its key, and the requests it signs.
    struct Device {
        let key = P256PrivateKey()
        var thumbprint: String { DPoP.thumbprint(of: key.publicKey) }

        func proof(_ stack: TestStack, _ method: String, _ path: String, token: String?, body: Data, issuedAt: Date = Date()) throws -> String {
            try DPoP.proof(key: key, method: method, url: stack.baseURL + path, accessToken: token, body: Array(body), issuedAt: issuedAt)
        }

        func call(_ stack: TestStack, _ method: String, _ path: String, token: String?, body: Data = Data(), contentType: String? = nil,
                  proof: String? = nil, extraHeaders: [String: String] = [:]) async throws -> TestStack.Reply {
            let header = try proof ?? self.proof(stack, method, path, token: token, body: body)
            return try await stack.call(method, path, bearer: token, body: body.isEmpty ? nil : body, contentType: contentType,
                                        headers: ["DPoP": header].merging(extraHeaders) { _, new in new })
        }

        func login(_ stack: TestStack, _ token: String, photo: String) async throws -> TestStack.Reply {
            try await call(stack, "POST", "/v1/face-login", token: token, body: try TestEnvironment.image(photo), contentType: "image/jpeg")
        }

        func confirm(_ stack: TestStack, _ token: String, _ confirmation: TestStack.Reply, number: String, ticket: String? = nil) async throws -> TestStack.Reply {
            var fields = ["confirmationId": try #require(confirmation.string("confirmationId")), "employeeNumber": number]
            fields["bindingTicket"] = ticket
            return try await call(stack, "POST", "/v1/face-login/confirm", token: token, body: try JSONSerialization.data(withJSONObject: fields),
                                  contentType: "application/json")
        }
    }

    static func ticket(_ stack: TestStack, _ app: TestStack.App, employeeNumber: String) async throws -> String {
        let reply = try await stack.call("POST", "/v1/device-bindings", basic: (app.id, app.secret), json: ["employeeNumber": employeeNumber])
        #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
        return try #require(reply.string("bindingTicket"))
    }

    static func claims(_ identityToken: String) throws -> [String: Any] {
        let payload = try #require(Base64URL.decode(String(identityToken.split(separator: ".")[1])))
        return try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    }

    /// New apps bind by key with app-server tickets. The attacker holds the victim's photo, device id and
    /// employee number, and still gets no identity token; every forged or reused proof is refused.
    @Test func theVictimsPhotoDeviceIdAndNumberAreNotEnough() async throws {
        try await TestStack.with { stack in
            let created = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: [
                "name": "keys", "modules": ["faceLogin": "formal", "ctid": "formal", "kiosk": "formal", "deviceAuth": "formal"]])
            #expect(created.string("deviceBinding") == "dpop")
            #expect(created.string("deviceBindingPolicy") == "appServerTicket")
            let app = TestStack.App(id: try #require(created.string("appId")), secret: try #require(created.string("appSecret")))
            let victim = try await stack.createUser(app, employeeNumber: "E7001", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: victim, photo: "obama.jpg").status == 201)
            _ = try await stack.createUser(app, employeeNumber: "E7002", name: "Joe Biden")
            let token = try await stack.accessToken(app)

            // The victim's phone: a fresh key is asked to confirm; the number alone does not bind it.
            let phone = Device()
            let first = try await phone.login(stack, token, photo: "obama2.jpg")
            #expect(first.string("status") == "CONFIRM_REQUIRED", "\(String(decoding: first.body, as: UTF8.self))")
            let noTicket = try await phone.confirm(stack, token, first, number: "E7001")
            #expect(noTicket.status == 403 && noTicket.errorCode == "BINDING_TICKET_INVALID")
            // That refusal spent the confirmation: the ticket binds on the next login's.
            let ticket = try await Self.ticket(stack, app, employeeNumber: "E7001")
            #expect(try await phone.confirm(stack, token, first, number: "E7001", ticket: ticket).errorCode == "CONFIRMATION_INVALID")
            let second = try await phone.login(stack, token, photo: "obama2.jpg")
            let bound = try await phone.confirm(stack, token, second, number: "E7001", ticket: ticket)
            #expect(bound.string("status") == "SUCCESS", "\(String(decoding: bound.body, as: UTF8.self))")
            let claims = try Self.claims(try #require(bound.string("identityToken")))
            #expect((claims["cnf"] as? [String: String])?["jkt"] == phone.thumbprint)
            #expect(claims["amr"] as? [String] == ["face", "swk"])
            #expect(claims["deviceId"] as? String == phone.thumbprint)
            // From now on the bound key logs in at once (1:1 against its user).
            let again = try await phone.login(stack, token, photo: "obama3.jpg")
            #expect(again.string("status") == "SUCCESS" && again.string("userId") == victim)

            // No proof, the victim's thumbprint as the device id: refused before any face is looked at.
            let headerOnly = try await stack.call("POST", "/v1/face-login", bearer: token, body: try TestEnvironment.image("obama3.jpg"),
                                                  contentType: "image/jpeg", headers: ["X-Device-Id": phone.thumbprint])
            #expect(headerOnly.status == 401 && headerOnly.errorCode == "DPOP_PROOF_INVALID")
            #expect(headerOnly.headers["www-authenticate"]?.contains("invalid_dpop_proof") == true)

            // The attacker's own key with the victim's photo and number: asked to confirm, never bound.
            let attacker = Device()
            let foreignTicket = try await Self.ticket(stack, app, employeeNumber: "E7002")
            for ticket in [nil, "fbt_guess"] as [String?] {
                let stolen = try await attacker.login(stack, token, photo: "obama3.jpg")
                #expect(stolen.string("status") == "CONFIRM_REQUIRED")
                #expect(try await attacker.confirm(stack, token, stolen, number: "E7001", ticket: ticket).errorCode == "BINDING_TICKET_INVALID")
            }
            // A genuine ticket for someone else is a wrong number, like any other.
            let stolen = try await attacker.login(stack, token, photo: "obama3.jpg")
            #expect(try await attacker.confirm(stack, token, stolen, number: "E7001", ticket: foreignTicket).errorCode == "EMPLOYEE_NUMBER_MISMATCH")

            // No enrolment oracle: an unbound key hears CONFIRM_REQUIRED for a stranger's face too, and
            // the confirmation then fails like a wrong number, even with a real ticket for the claimed user.
            let stranger = try await attacker.login(stack, token, photo: "biden.jpg")
            #expect(stranger.string("status") == "CONFIRM_REQUIRED")
            let claimed = try await attacker.confirm(stack, token, stranger, number: "E7002", ticket: foreignTicket)
            #expect(claimed.errorCode == "EMPLOYEE_NUMBER_MISMATCH")
            let wrongNumber = try await attacker.confirm(stack, token, stranger, number: "E9999", ticket: foreignTicket)
            #expect(wrongNumber.errorCode == "EMPLOYEE_NUMBER_MISMATCH")
            #expect(claimed.json["error"].map { "\($0)" }?.contains("does not match the face") == true)

            // Proofs that must not pass.
            let photo = try TestEnvironment.image("obama3.jpg")
            let path = "/v1/face-login"
            let replayed = try phone.proof(stack, "POST", path, token: token, body: photo)
            #expect(try await phone.call(stack, "POST", path, token: token, body: photo, contentType: "image/jpeg", proof: replayed).string("status") == "SUCCESS")
            let cases: [(String, String)] = [
                ("replayed", replayed),
                ("another URL", try phone.proof(stack, "POST", "/v1/face-login/confirm", token: token, body: photo)),
                ("another image", try phone.proof(stack, "POST", path, token: token, body: try TestEnvironment.image("obama2.jpg"))),
                ("expired", try phone.proof(stack, "POST", path, token: token, body: photo, issuedAt: Date().addingTimeInterval(-600))),
                ("another access token", try phone.proof(stack, "POST", path, token: try await stack.accessToken(app), body: photo)),
                ("another key's signature", try Self.resigned(try phone.proof(stack, "POST", path, token: token, body: photo), by: attacker)),
            ]
            for (what, proof) in cases {
                let reply = try await phone.call(stack, "POST", path, token: token, body: photo, contentType: "image/jpeg", proof: proof)
                #expect(reply.status == 401 && reply.errorCode == "DPOP_PROOF_INVALID", "\(what): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
            }
            // Every refused proof is in the audit trail, with the key it claimed where it was readable.
            let refused = try await stack.database.pool.query("""
                SELECT count(*)::int AS n FROM transactions
                WHERE app_id = \(UUID(uuidString: app.id)!) AND kind = 'face.login' AND outcome = 'DPOP_PROOF_INVALID'
                """).first?.decode("n", as: Int.self)
            #expect(refused == cases.count + 1)
        }
    }

    /// The header of `proof` with another device's public key over the same claims and signature.
    static func resigned(_ proof: String, by device: Device) throws -> String {
        let parts = proof.split(separator: ".").map(String.init)
        let theirs = try DPoP.proof(key: device.key, method: "POST", url: "https://x/y").split(separator: ".").map(String.init)
        return [theirs[0], parts[1], parts[2]].joined(separator: ".")
    }

    /// A key bound to several users costs one embedding per login: the matcher compares the photo 1:1 with each bound user
    /// and searches the gallery with the same embedding (counted by `facegate_matcher_embeddings_total`). Here the phone is
    /// bound to three users, the one whose face it shows last in line and one with no face left at all. On a gallery cut
    /// into two shards too: one shard embeds the probe, and both search its sealed template.
    @Test(arguments: [1, 2]) func aLoginOnAKeyBoundToThreeUsersEmbedsThePhotoOnce(shards: Int) async throws {
        let sharded = shards == 1 ? [:] : ["FACEGATE_MATCHER_SHARDS": "2", "MATCHER_SHARD_COUNT": "2", "MATCHER_SHARD_INDEX": "0"]
        try await TestStack.with(extra: sharded) { stack in
            var matchers = [try #require(stack.matcher)]
            var second: Task<Void, Never>?
            if shards == 2 {
                var environment = stack.environment(for: "matcher-worker")
                environment["MATCHER_SHARD_INDEX"] = "1"
                let other = try MatcherWorker(configuration: try MatcherConfiguration(environment: Environment(environment)))
                second = Task { _ = try? await other.group.run(handleSignals: false) }
                try await other.jobs.waitUntilAssigned(timeout: .seconds(60))
                matchers.append(other)
            }
            defer { if shards == 2 { matchers[1].group.requestStop(reason: "test finished") } }
            func embeddings() -> Double { matchers.map(\.embeddings).reduce(0, +) }

            let app = try await stack.createApp(extra: ["deviceBinding": "dpop", "deviceBindingPolicy": "appServerTicket"])
            let obama = try await stack.createUser(app, employeeNumber: "E8001", name: "Barack Obama")
            let biden = try await stack.createUser(app, employeeNumber: "E8002", name: "Joe Biden")
            let faceless = try await stack.createUser(app, employeeNumber: "E8003", name: "Once Enrolled")
            #expect(try await stack.enroll(app, user: biden, photo: "biden.jpg").status == 201)
            let lent = try #require(try await stack.enroll(app, user: faceless, photo: "obama.jpg").string("templateId"))
            let token = try await stack.accessToken(app)
            let phone = Device()
            func bind(_ photo: String, _ number: String) async throws {
                let before = embeddings()
                let asked = try await phone.login(stack, token, photo: photo)
                #expect(asked.string("status") == "CONFIRM_REQUIRED", "\(String(decoding: asked.body, as: UTF8.self))")
                // A search (the key is not bound to the face's user): embedded once too.
                #expect(embeddings() - before == 1)
                let ticket = try await Self.ticket(stack, app, employeeNumber: number)
                #expect(try await phone.confirm(stack, token, asked, number: number, ticket: ticket).string("status") == "SUCCESS")
            }
            try await bind("biden.jpg", "E8002")
            try await bind("obama2.jpg", "E8003")
            // The same face for another user is refused, whichever shard holds the face it repeats: every shard is searched.
            let repeated = try await stack.enroll(app, user: obama, photo: "obama3.jpg")
            #expect(repeated.errorCode == "DUPLICATE_FACE", "\(String(decoding: repeated.body, as: UTF8.self))")
            // E8003's face goes, and the same face is enrolled for E8001: the phone is now bound to E8003 (no face), then E8002.
            let held = matchers.map(\.templateCount).reduce(0, +)
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/users/\(faceless)/faces/\(lent)", bearer: stack.adminKey).status == 204)
            // (The matchers drop the deleted template when the broadcast reaches them; until then the face is a duplicate on
            // the shard that holds it.)
            for _ in 0..<50 where matchers.map(\.templateCount).reduce(0, +) >= held { try await Task.sleep(for: .milliseconds(100)) }
            var enrolled = try await stack.enroll(app, user: obama, photo: "obama.jpg")
            for _ in 0..<50 where enrolled.errorCode == "DUPLICATE_FACE" {
                try await Task.sleep(for: .milliseconds(100))
                enrolled = try await stack.enroll(app, user: obama, photo: "obama.jpg")
            }
            #expect(enrolled.status == 201, "\(String(decoding: enrolled.body, as: UTF8.self))")
            try await bind("obama3.jpg", "E8001")

            let before = embeddings()
            // Bound in order E8001, E8003, E8002: Biden's face is compared with all three, and embedded once.
            let login = try await phone.login(stack, token, photo: "biden.jpg")
            #expect(login.string("status") == "SUCCESS", "\(String(decoding: login.body, as: UTF8.self))")
            #expect(login.string("userId") == biden)
            #expect(embeddings() - before == 1)
            // … and found by the 1:1 comparison with the bound users, not by the search.
            let transaction = try #require(login.string("transactionId"))
            let rows = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=face.login", bearer: stack.adminKey).json["items"]
            let row = try #require((rows as? [[String: Any]])?.first { $0["transactionId"] as? String == transaction })
            #expect((row["detail"] as? [String: String])?["search"] == "1:1")
            if shards == 2 {
                matchers[1].group.requestStop(reason: "test finished")
                await second?.value
            }
        }
    }

    /// The `boundDevice` policy: an already-bound phone approves the new one; the app server's ticket only
    /// binds a user's first key. Through `FaceGateClient`, which signs with its key file on every call.
    @Test func aBoundDeviceApprovesTheNextOneThroughTheClient() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop", "deviceBindingPolicy": "boundDevice"])
            let user = try await stack.createUser(app, employeeNumber: "E1001", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let keys = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("facegate-dpop-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: keys) }
            func client(_ name: String) -> FaceLogin {
                var configuration = FaceGateConfiguration(baseURL: URL(string: stack.baseURL)!, appId: app.id, deviceId: name,
                                                          refreshAccessToken: { try await stack.accessToken(app) })
                configuration.deviceKey = DeviceKey(file: keys.appendingPathComponent("\(name).der"))
                return FaceLogin(configuration: configuration)
            }

            // The first phone: the app server's ticket binds it (the user has no key yet).
            let first = client("first-phone")
            guard case .confirmationRequired = try await first.validate(image: try TestEnvironment.image("obama2.jpg")) else {
                Issue.record("a new key must confirm")
                return
            }
            let identity = try await first.confirm(employeeNumber: "E1001", bindingTicket: try await Self.ticket(stack, app, employeeNumber: "E1001"))
            #expect(identity.userId == user)
            // The key file is the device: a new client object on the same file logs in at once.
            guard case .success(let again) = try await client("first-phone").validate(image: try TestEnvironment.image("obama3.jpg")) else {
                Issue.record("the bound key must log in")
                return
            }
            #expect(again.userId == user)

            // The second phone: the app server's ticket no longer binds; the first phone's approval does.
            let second = client("second-phone")
            _ = try await second.validate(image: try TestEnvironment.image("obama3.jpg"))
            await #expect(throws: FaceGateError.self) {
                try await second.confirm(employeeNumber: "E1001", bindingTicket: try await Self.ticket(stack, app, employeeNumber: "E1001"))
            }
            let firstKey = DeviceKey(file: keys.appendingPathComponent("first-phone.der"))
            let token = try await stack.accessToken(app)
            let body = Data("{}".utf8)
            let approval = try await stack.call("POST", "/v1/device-bindings", bearer: token, body: body, contentType: "application/json", headers: [
                "DPoP": try DPoP.proof(key: try Self.privateKey(firstKey), method: "POST", url: stack.baseURL + "/v1/device-bindings", accessToken: token,
                                       body: Array(body))])
            #expect(approval.status == 201, "\(String(decoding: approval.body, as: UTF8.self))")
            // The refused confirmation was spent: the second phone logs in again and confirms with the approval.
            _ = try await second.validate(image: try TestEnvironment.image("obama3.jpg"))
            let approved = try await second.confirm(employeeNumber: "E1001", bindingTicket: try #require(approval.string("bindingTicket")))
            #expect(approved.userId == user)
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": approved.identityToken])
            let secondKey = try DeviceKey(file: keys.appendingPathComponent("second-phone.der")).thumbprint()
            #expect(exchanged.string("deviceId") == secondKey)
            #expect(secondKey != (try firstKey.thumbprint()))
        }
    }

    static func privateKey(_ key: DeviceKey) throws -> P256PrivateKey {
        try P256PrivateKey(derRepresentation: Array(try Data(contentsOf: key.file)))
    }
}
