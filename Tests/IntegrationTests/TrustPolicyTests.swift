import AuthGateway
import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import Glibc
import JWT
import KafkaClient
import ServiceKit
import Testing

/// Every door to an identity, tried as an attacker would: each test is one of the leaks the trust policy closes, on the
/// real stack with real photos (`TrustPolicy` says what each door demands).
/// Kiosk logins here: 35 at once, then one a second; server callers at the default 20 a second, 40 at once.
@Suite(.serialized, .sharedStack(withKiosk: true, extra: ["FACEGATE_KIOSK_LOGIN_RATE": "60", "FACEGATE_KIOSK_LOGIN_BURST": "35"]))
struct TrustPolicyTests {
    static let extra = ["FACEGATE_KIOSK_LOGIN_RATE": "60", "FACEGATE_KIOSK_LOGIN_BURST": "35"]

    /// A kiosk-enabled app with obama enrolled; kiosk liveness off, so one photo is a whole selfie.
    static func kioskApp(_ stack: TestStack) async throws -> (TestStack.App, user: String) {
        let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
        let user = try await stack.createUser(app, employeeNumber: "K-1", name: "Barack Obama")
        #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
        return (app, user)
    }

    static func kioskLogin(_ stack: TestStack, _ token: String, photo: String, signedBy key: P256PrivateKey?) async throws -> TestStack.Reply {
        let body = Multipart.body(challengeId: nil, frames: [try TestEnvironment.image(photo)])
        guard let key else {
            return try await stack.call("POST", "/v1/kiosk/login", bearer: token, body: body, contentType: Multipart.contentType)
        }
        return try await stack.call("POST", "/v1/kiosk/login", bearer: token, body: body, contentType: Multipart.contentType,
                                    kiosk: TestStack.Kiosk(id: "", key: key))
    }

    /// The route table, read off what each route declares it answers: every served route is declared; a route whose
    /// answers can hand out an identity token, a binding ticket or a factor verdict names its door in the trust policy;
    /// and every door is some route's. A new route that answers one of those without a door fails here.
    @Test func everyRouteThatHandsOutAnIdentityNamesItsDoor() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let declared = stack.gateway.routeDeclarations
            #expect(Set(declared.map { "\($0.method) \($0.pattern)" }) == Set(stack.gateway.routes.map { "\($0.method) \($0.pattern)" }))
            let bypassing = declared.filter { !$0.trustAnswers.isEmpty && $0.doorNames.isEmpty }
            #expect(bypassing.isEmpty, "routes answering \(bypassing.map { "\($0.method) \($0.pattern): \($0.trustAnswers)" }) name no door")
            #expect(Set(declared.flatMap(\.doorNames)) == Set(AuthGateway.trustPolicyDoors), "a door of the policy no route serves")
            #expect(declared.filter { !$0.trustAnswers.isEmpty }.count >= AuthGateway.trustPolicyDoors.count - 1)
        }
    }

    @Test func newAppsStartWithTheKioskModuleOff() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let created = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["name": "fresh"])
            #expect((created.json["modules"] as? [String: String])?["kiosk"] == "disabled")
        }
    }

    /// A key nobody registered gets no kiosk token, no session and no session's result, whatever else it holds (the app's
    /// access token, a real interview token); a registered kiosk gets a token that names it; a revoked one gets nothing
    /// more, and the session it left open ends.
    @Test func onlyARegisteredKioskGetsKioskIdentities() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let (app, obama) = try await Self.kioskApp(stack)
            let token = try await stack.accessToken(app)
            let stranger = P256PrivateKey()
            for key in [nil, stranger] as [P256PrivateKey?] {
                let login = try await Self.kioskLogin(stack, token, photo: "obama2.jpg", signedBy: key)
                #expect(login.status == 403 && login.errorCode == "KIOSK_NOT_REGISTERED", "\(String(decoding: login.body, as: UTF8.self))")
                #expect(login.json["token"] == nil)
            }
            let strangerSession = try await stack.call("POST", "/v1/kiosk/sessions", bearer: token, kiosk: TestStack.Kiosk(id: "", key: stranger))
            #expect(strangerSession.errorCode == "KIOSK_NOT_REGISTERED")

            // The registered kiosk: a token bound to its key, earned by the face alone, naming the kiosk.
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let login = try await Self.kioskLogin(stack, token, photo: "obama2.jpg", signedBy: kiosk.kiosk.key)
            #expect(login.json["success"] as? Bool == true, "\(String(decoding: login.body, as: UTF8.self))")
            let claims = try DPoPTests.claims(try #require(login.string("token")))
            #expect((claims["cnf"] as? [String: String])?["jkt"] == kiosk.kiosk.jkt)
            #expect(claims["amr"] as? [String] == ["face"] && claims["kioskId"] as? String == kiosk.kiosk.id)
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": login.string("token")!])
            #expect(exchanged.string("userId") == obama && exchanged.string("method") == "kiosk")
            #expect(exchanged.json["amr"] as? [String] == ["face"] && exchanged.string("kioskId") == kiosk.kiosk.id)

            // A session's result is the kiosk's alone: another key with the interview token reads nothing.
            let session = try await kiosk.start()
            let done = try await kiosk.document(session, step: "selfie", image: try KioskDriver.stills()[0])
            #expect(done.string("state") == "completed", "\(String(decoding: done.body, as: UTF8.self))")
            let result = try #require(try await kiosk.get(session).json["result"] as? [String: Any])
            let onboarded = try DPoPTests.claims(try #require(result["token"] as? String))
            #expect((onboarded["cnf"] as? [String: String])?["jkt"] == kiosk.kiosk.jkt && onboarded["kioskId"] as? String == kiosk.kiosk.id)
            #expect(onboarded["amr"] as? [String] == ["face"])
            for key in [nil, stranger] as [P256PrivateKey?] {
                let read = try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)", headers: ["X-Interview-Token": session.token],
                                                kiosk: key.map { TestStack.Kiosk(id: "", key: $0) })
                #expect(read.status == 403 && read.errorCode == "KIOSK_NOT_REGISTERED")
                #expect(read.json["result"] == nil)
            }
            // The event stream with the interview token and any `ticket` still needs the kiosk's proof.
            let events = try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)/events?ticket=kt_forged", headers: ["X-Interview-Token": session.token])
            #expect(events.status == 403 && events.errorCode == "KIOSK_NOT_REGISTERED")
            // Another registered kiosk of the app is not the one that opened the session.
            let other = try await stack.registerKiosk(app, name: "Other door")
            #expect(try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)", headers: ["X-Interview-Token": session.token],
                                         kiosk: other).errorCode == "KIOSK_NOT_REGISTERED")

            // Revoked: refused at once, and its open session is cancelled.
            let open = try await kiosk.start()
            let listed = try await stack.call("GET", "/v1/apps/\(app.id)/kiosks", bearer: stack.adminKey)
            #expect((listed.json["items"] as? [[String: Any]])?.contains { $0["kioskId"] as? String == kiosk.kiosk.id } == true)
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/kiosks/\(kiosk.kiosk.id)", bearer: stack.adminKey).status == 204)
            #expect(try await Self.kioskLogin(stack, token, photo: "obama2.jpg", signedBy: kiosk.kiosk.key).errorCode == "KIOSK_NOT_REGISTERED")
            #expect(try await kiosk.get(open).errorCode == "KIOSK_NOT_REGISTERED")
            let id = try #require(UUID(uuidString: open.id))
            var state = ""
            for _ in 0..<40 where state != "cancelled" {
                state = try await stack.database.pool.query("SELECT state FROM kiosk_sessions WHERE id = \(id)").first?.decode("state", as: String.self) ?? ""
                if state != "cancelled" { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(state == "cancelled")
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/kiosks/\(UUID())", bearer: stack.adminKey).status == 404)

            // Every refusal is on the app's chain.
            let refused = try await stack.database.pool.query("""
                SELECT count(*)::int AS n FROM transactions WHERE app_id = \(UUID(uuidString: app.id)!) AND outcome = 'KIOSK_NOT_REGISTERED'
                """).first?.decode("n", as: Int.self)
            #expect(refused == 9)
        }
    }

    /// A kiosk serves walk-ups who are not enrolled: thirty of them in a row neither throttle nor lock it, and the
    /// enrolled customer after them gets in. The kiosk's own rate is its limit.
    @Test func walkUpsWhoAreNotEnrolledDoNotLockAKiosk() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let (app, obama) = try await Self.kioskApp(stack)
            let token = try await stack.accessToken(app)
            let kiosk = try await stack.registerKiosk(app)
            var answers: [String] = []
            for _ in 0..<30 {
                answers.append(try await Self.kioskLogin(stack, token, photo: "biden.jpg", signedBy: kiosk.key).string("error") ?? "none")
            }
            #expect(Set(answers) == ["NO_MATCH_FACE"])
            let customer = try await Self.kioskLogin(stack, token, photo: "obama2.jpg", signedBy: kiosk.key)
            #expect(customer.json["success"] as? Bool == true && customer.string("customerUUID") == obama)
            // Past its burst, the kiosk waits (frames that are not images cost a login from its rate, nothing else).
            var limited: TestStack.Reply?
            for _ in 0..<20 where limited == nil {
                let reply = try await stack.call("POST", "/v1/kiosk/login", bearer: token, body: Multipart.body(challengeId: nil, frames: [Data("x".utf8)]),
                                                 contentType: Multipart.contentType, kiosk: kiosk)
                if reply.status == 429 { limited = reply }
            }
            #expect(limited?.errorCode == "RATE_LIMITED" && limited?.headers["retry-after"] != nil)
        }
    }

    /// With the victim's photo, guessing employee numbers through a client's 1:1 verify learns nothing: the calling key
    /// is bound to no one, so every number, the right one included, is `match: false`.
    @Test func guessingNumbersThroughClientVerifyLearnsNothing() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop"])
            let victim = try await stack.createUser(app, employeeNumber: "E7001", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: victim, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)
            let photo = try TestEnvironment.image("obama2.jpg")
            var answers: [String: Bool] = [:]
            for number in ["E7000", "E7001", "E7002", "E7003"] {
                let attacker = DPoPTests.Device()
                let reply = try await attacker.call(stack, "POST", "/v1/face-verify?employeeNumber=\(number)", token: token, body: photo,
                                                    contentType: "image/jpeg",
                                                    proof: try attacker.proof(stack, "POST", "/v1/face-verify", token: token, body: photo))
                #expect(reply.status == 200 && reply.json.keys.sorted() == ["match", "transactionId"])
                answers[number] = reply.json["match"] as? Bool
            }
            #expect(answers == ["E7000": false, "E7001": false, "E7002": false, "E7003": false])
        }
    }

    /// Where the app needs a binding ticket, a confirmation without one answers the same for the right number and a
    /// wrong one, and is spent; device-bindings answers an unbound key the same for a known and an unknown number.
    @Test func wrongFactorsAllGetTheSameAnswer() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop", "deviceBindingPolicy": "appServerTicket"])
            let victim = try await stack.createUser(app, employeeNumber: "E7001", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: victim, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)
            var answers: [String] = []
            for number in ["E7001", "E9999"] {
                let attacker = DPoPTests.Device()
                let login = try await attacker.login(stack, token, photo: "obama2.jpg")
                #expect(login.string("status") == "CONFIRM_REQUIRED")
                let refused = try await attacker.confirm(stack, token, login, number: number)
                answers.append("\(refused.status) \(refused.errorCode ?? "") \((refused.json["error"] as? [String: Any])?["message"] as? String ?? "")")
                #expect(try await attacker.confirm(stack, token, login, number: "E7001").errorCode == "CONFIRMATION_INVALID", "spent")
            }
            #expect(answers[0] == answers[1] && answers[0].hasPrefix("403 BINDING_TICKET_INVALID"), "\(answers)")

            var bindings: [String] = []
            for number in ["E7001", "E4040"] {
                let body = try JSONSerialization.data(withJSONObject: ["employeeNumber": number])
                let reply = try await DPoPTests.Device().call(stack, "POST", "/v1/device-bindings", token: token, body: body, contentType: "application/json")
                bindings.append("\(reply.status) \(reply.errorCode ?? "") \((reply.json["error"] as? [String: Any])?["message"] as? String ?? "")")
            }
            #expect(bindings[0] == bindings[1] && bindings[0].hasPrefix("403 FORBIDDEN"), "\(bindings)")
        }
    }

    /// A rotation with no grace kills the old secret and every access token minted before it at once; during a grace the
    /// old secret mints access tokens only, and revoking it kills those too.
    @Test func aRotatedSecretCanBeCutOff() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let app = try await stack.createApp()
            let before = try await stack.accessToken(app)
            func serial(_ token: String) async throws -> TestStack.Reply {
                try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: token, json: ["authMode": "0x42"])
            }
            #expect(try await serial(before).status == 200)
            try await Task.sleep(for: .seconds(1.1))
            let cut = try await stack.call("POST", "/v1/apps/\(app.id)/secret", bearer: stack.adminKey, json: ["previousSecretValidFor": 0])
            #expect(cut.status == 200 && cut.json["previousSecretValidForSeconds"] as? Int == 0)
            let second = TestStack.App(id: app.id, secret: try #require(cut.string("appSecret")))
            #expect(try await stack.call("POST", "/v1/access-tokens", basic: (app.id, app.secret)).status == 401)
            #expect(try await serial(before).errorCode == "ACCESS_TOKEN_EXPIRED")

            // With a grace, the previous secret mints access tokens, and nothing else.
            try await Task.sleep(for: .seconds(1.1))
            let graced = try await stack.call("POST", "/v1/apps/\(app.id)/secret", bearer: stack.adminKey, json: ["previousSecretValidFor": 600])
            let third = TestStack.App(id: app.id, secret: try #require(graced.string("appSecret")))
            let minted = try await stack.accessToken(second)
            #expect(try await serial(minted).status == 200)
            #expect(try await stack.call("POST", "/v1/device-bindings", basic: (app.id, second.secret), json: ["employeeNumber": "E1"]).status == 401)
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", basic: (app.id, second.secret), body: try TestEnvironment.image("obama.jpg"),
                                         contentType: "image/jpeg").status == 401)
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/secret/previous", bearer: stack.adminKey).status == 204)
            #expect(try await serial(minted).errorCode == "ACCESS_TOKEN_EXPIRED")
            #expect(try await stack.call("POST", "/v1/access-tokens", basic: (app.id, second.secret)).status == 401)
            #expect(try await serial(try await stack.accessToken(third)).status == 200)
        }
    }

    /// RFC 9112: Content-Length beside Transfer-Encoding is refused with 400 before a byte of the body is read, even on an
    /// upload route with a bogus token (which would otherwise be a 401).
    @Test func ambiguousFramingIsRefusedUnread() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let status = try RawHTTP.status(port: stack.gateway.httpPort, head: """
                POST /v1/face-login HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer bogus\r\nContent-Type: image/jpeg\r\n\
                Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n
                """)
            #expect(status == 400)
            // A chunked upload of a stranger is refused for its credential, also unread.
            let chunked = try RawHTTP.status(port: stack.gateway.httpPort, head: """
                POST /v1/face-login HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer bogus\r\nContent-Type: image/jpeg\r\n\
                Transfer-Encoding: chunked\r\n\r\n
                """)
            #expect(chunked == 401)
        }
    }

    /// A proof's `htu` names the gateway's public URL: a gateway reachable beyond loopback without `FACEGATE_PUBLIC_URL`
    /// checks no proof (503), and with it a proof made for another host is refused whatever `Host` the client sends.
    @Test func deviceProofsNameThePublicURL() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_HTTP_HOST": "0.0.0.0"]) { stack in
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop"])
            let token = try await stack.accessToken(app)
            let unset = try await DPoPTests.Device().call(stack, "GET", "/v1/liveness/challenges", token: token)
            #expect(unset.status == 503 && unset.errorCode == "SERVICE_UNAVAILABLE")
            // The OpenAPI document names no host it does not know: its server is relative.
            #expect((try await stack.call("GET", "/openapi.json").json["servers"] as? [[String: String]])?.first?["url"] == "/")
        }
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_HTTP_HOST": "0.0.0.0", "FACEGATE_PUBLIC_URL": "https://facegate.test"]) { stack in
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop"])
            let token = try await stack.accessToken(app)
            let phone = DPoPTests.Device()
            let path = "/v1/liveness/challenges"
            #expect((try await stack.call("GET", "/openapi.json").json["servers"] as? [[String: String]])?.first?["url"] == "https://facegate.test")
            let named = try DPoP.proof(key: phone.key, method: "GET", url: "https://facegate.test" + path, accessToken: token)
            #expect(try await phone.call(stack, "GET", path, token: token, proof: named).status == 200)
            let elsewhere = try DPoP.proof(key: phone.key, method: "GET", url: "https://phish.example" + path, accessToken: token)
            let refused = try await phone.call(stack, "GET", path, token: token, proof: elsewhere, extraHeaders: ["Host": "phish.example"])
            #expect(refused.status == 401 && refused.errorCode == "DPOP_PROOF_INVALID")
        }
    }

    /// A kiosk command replayed to a restarted orchestrator, which has never seen it (so no replay memory can tell), is
    /// refused by its age: the session it would create again stays erased.
    @Test func aCommandReplayedAfterARestartIsRefusedByItsAge() async throws {
        try await TestStack.with(withMatcher: false, withKiosk: true, extra: ["KIOSK_COMMAND_GRACE_SECONDS": "1", "FACEGATE_REQUEST_TIMEOUT_SECONDS": "2"]) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            let id = try #require(UUID(uuidString: session.id))
            let commands = stack.environment["FACEGATE_TOPIC_PREFIX"]! + "kiosk.commands.v1"
            // The create command as it crossed the broker, signed and sealed by the gateway.
            let create = try await MessageAuthenticationTests.read(commands) { $0.key == Array(session.id.utf8) }
            // The session is erased (as its retention would), the orchestrator restarts, the command's deadline and grace pass.
            _ = try await stack.database.pool.query("DELETE FROM kiosk_sessions WHERE id = \(id)")
            try await stack.restartKioskOrchestrator()
            try await Task.sleep(for: .seconds(4))
            let producer = try KafkaProducer(configuration: KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"),
                                                                               clientId: "replayer"))
            defer { producer.close() }
            _ = try await producer.send(KafkaRecord(topic: commands, key: create.key, value: create.value, headers: create.headers))
            let dead = try await MessageAuthenticationTests.read(commands + ".dlq") { message in
                String(decoding: message.header(DeadLetterHeader.error) ?? [], as: UTF8.self).contains("expired")
            }
            #expect(dead.value.isEmpty, "dead letters keep no payload")
            let left = try await stack.database.pool.query("SELECT count(*)::int AS n FROM kiosk_sessions WHERE id = \(id)").first?.decode("n", as: Int.self)
            #expect(left == 0, "the replayed command created the session again")
        }
    }

    /// A replayed or forged device proof on a route that records nothing when it succeeds still leaves a row.
    @Test func refusedDeviceProofsAreAudited() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop"])
            let token = try await stack.accessToken(app)
            let phone = DPoPTests.Device()
            let proof = try phone.proof(stack, "GET", "/v1/liveness/challenges", token: token, body: Data())
            #expect(try await phone.call(stack, "GET", "/v1/liveness/challenges", token: token, proof: proof).status == 200)
            let replayed = try await phone.call(stack, "GET", "/v1/liveness/challenges", token: token, proof: proof)
            #expect(replayed.status == 401 && replayed.errorCode == "DPOP_PROOF_INVALID")
            let body = try JSONSerialization.data(withJSONObject: ["credentialId": UUID().uuidString])
            let forged = try await phone.call(stack, "POST", "/v1/device-credentials/challenges", token: token, body: body, contentType: "application/json",
                                              proof: try phone.proof(stack, "POST", "/v1/device-credentials/challenges", token: token, body: Data("{}".utf8)))
            #expect(forged.errorCode == "DPOP_PROOF_INVALID")
            let rows = try await stack.database.pool.query("""
                SELECT kind FROM transactions WHERE app_id = \(UUID(uuidString: app.id)!) AND outcome = 'DPOP_PROOF_INVALID' ORDER BY created_at
                """).map { try $0.decode("kind", as: String.self) }
            #expect(rows == ["liveness.challenge.refused", "device.challenge"])
            for reply in [replayed, forged] {
                #expect((reply.json["error"] as? [String: Any])?["transactionId"] is String)
            }
        }
    }

    /// Refusals without a valid credential cannot flood the audit trail: per client address and period (2 s here, a minute
    /// by default) the first is a row of its own, the others one summary row that counts them.
    @Test func refusedCredentialsAreSummarisedPerAddress() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_REFUSAL_SUMMARY_SECONDS": "2"]) { stack in
            var recorded = 0
            for _ in 0..<30 {
                let reply = try await stack.call("GET", "/v1/apps", bearer: "fgk_not_a_key")
                #expect(reply.status == 401 && reply.errorCode == "UNAUTHORIZED")
                if (reply.json["error"] as? [String: Any])?["transactionId"] is String { recorded += 1 }
            }
            func rows() async throws -> [(outcome: String, count: Int)] {
                try await stack.database.pool.query("""
                    SELECT outcome, coalesce((detail->>'count')::int, 1) AS n FROM transactions
                    WHERE app_id = \(UUID(uuidString: "00000000-0000-0000-0000-000000000000")!) AND kind = 'auth.refused'
                    """).map { (try $0.decode("outcome", as: String.self), try $0.decode("n", as: Int.self)) }
            }
            var found = try await rows()
            for _ in 0..<40 where found.reduce(0, { $0 + $1.count }) < 30 {
                try await Task.sleep(for: .milliseconds(250))
                found = try await rows()
            }
            #expect(found.reduce(0) { $0 + $1.count } == 30, "\(found)")
            #expect(found.count <= 6 && found.filter { $0.outcome == "UNAUTHORIZED" }.count == recorded, "\(found)")
            #expect(found.contains { $0.outcome == "REPEATED" && $0.count > 1 })
        }
    }

    /// Operators and app servers are limited per credential, never by what their searches find: thirty searches that find
    /// no one all answer, and a burst above the credential's rate is told to wait.
    @Test func serverCallersAreLimitedPerKeyNotChargedAsLogins() async throws {
        try await TestStack.with(withKiosk: true, extra: Self.extra) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "E1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let stranger = try TestEnvironment.image("biden.jpg")
            var statuses: [Int] = []
            for _ in 0..<30 {
                let reply = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey, body: stranger, contentType: "image/jpeg")
                statuses.append(reply.status)
                #expect(reply.string("outcome") == "NO_MATCH_FACE" && reply.json["match"] == nil)
            }
            #expect(Set(statuses) == [200])
            let burst = try await withThrowingTaskGroup(of: TestStack.Reply.self) { group in
                for _ in 0..<60 {
                    group.addTask { try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey, body: Data("x".utf8), contentType: "image/jpeg") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let limited = burst.filter { $0.status == 429 }
            #expect(!limited.isEmpty && limited.allSatisfy { $0.errorCode == "RATE_LIMITED" && $0.headers["retry-after"] != nil })
            // Another credential is not held back by this one's burst.
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", basic: (app.id, app.secret), body: stranger, contentType: "image/jpeg").status == 200)
        }
    }
}

/// A request head sent on a raw socket, and the status of the answer (the body never sent).
enum RawHTTP {
    static func status(port: Int, head: String) throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(socket) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(socket, port: port) else { throw TestSetupError("cannot connect to the gateway") }
        return status(send: head, on: socket, readingUntil: "\r\n")
    }

    /// Connects `socket` to 127.0.0.1:`port`; false when nothing takes the connection.
    static func connect(_ socket: Int32, port: Int) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Sends `request`, reads the answer up to the first `end` (the status line, or the whole head) and returns its status
    /// (0 when there is none).
    static func status(send request: String, on socket: Int32, readingUntil end: String) -> Int {
        _ = request.withCString { Glibc.send(socket, $0, strlen($0), 0) }
        var read: [UInt8] = []
        var byte: UInt8 = 0
        let ending = Array(end.utf8.reversed())
        while !read.reversed().starts(with: ending), Glibc.recv(socket, &byte, 1, 0) == 1 { read.append(byte) }
        let parts = String(decoding: read, as: UTF8.self).split(separator: " ")
        return parts.count > 1 ? Int(parts[1]) ?? 0 : 0
    }
}
