import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import JWT
import Testing

/// Kiosk onboarding sessions through the whole stack: gateway → kiosk.commands.v1 → kiosk-orchestrator
/// → matcher, state in PostgreSQL, events as Server-Sent Events.
@Suite(.serialized, .sharedStack(withKiosk: true)) struct KioskFlowTests {
    @Test func sessionRefusesStepsOutOfOrderAndWrongTokensAndCancels() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()

            let view = try await kiosk.get(session)
            #expect(view.status == 200)
            #expect(view.string("state") == "selfie")

            let wrong = try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)", headers: ["X-Interview-Token": "not-the-token"], kiosk: kiosk.kiosk)
            #expect(wrong.status == 401)
            #expect(wrong.errorCode == "UNAUTHORIZED")
            let other = try await kiosk.start()
            let crossed = try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)", headers: ["X-Interview-Token": other.token], kiosk: kiosk.kiosk)
            #expect(crossed.status == 401)

            let early = try await kiosk.document(session, step: "id-back", image: try TestEnvironment.image("obama.jpg"))
            #expect(early.status == 409)
            #expect(early.errorCode == "CONFLICT")

            let cancelled = try await kiosk.cancel(session)
            #expect(cancelled.status == 204)
            #expect(try await kiosk.get(session).string("state") == "cancelled")
            let events = try await kiosk.events(session)
            #expect(events.map(\.name) == ["userCancelledSession"])
            let late = try await kiosk.selfie(session, frames: try KioskDriver.stills())
            #expect(late.status == 200)
            #expect(late.string("state") == "cancelled")
            #expect((late.json["events"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func knownFaceCompletesAtTheSelfieAsAnExistingCustomer() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
            let user = try await stack.createUser(app, employeeNumber: "C-1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()

            // With the app's kiosk liveness off, one photo is a whole selfie, as the kiosk SDK sends it.
            let reply = try await kiosk.document(session, step: "selfie", image: try KioskDriver.stills()[0])
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(reply.string("state") == "completed")
            let result = try #require(reply.json["result"] as? [String: Any])
            #expect(result["success"] as? Bool == true)
            #expect(result["existingUser"] as? Bool == true)
            #expect(result["customerUUID"] as? String == user)
            #expect(result["name"] as? String == "Barack Obama")
            let token = try #require(result["token"] as? String)
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": token])
            #expect(exchanged.status == 200)
            #expect(exchanged.string("userId") == user)
            #expect(exchanged.string("method") == "kiosk")
            // The token carries the kiosk-orchestrator's own kid, published beside the gateway's.
            let kid = try #require(JWT.unverifiedHeader(token)?["kid"])
            #expect(kid.hasPrefix(KioskTokenKey.kidPrefix))
            let jwks = try await stack.call("GET", "/.well-known/jwks.json")
            #expect((jwks.json["keys"] as? [[String: Any]])?.contains { $0["kid"] as? String == kid } == true)
            // Its key vouches for kiosk logins only: not for a face login, not as an access token.
            let kioskKey = JWTSigningKey(kid: kid, privateKey: try Ed25519PrivateKey(seed: Array(Data(base64Encoded: stack.environment["FACEGATE_KIOSK_SIGNING_KEY"]!)!)))
            let appId = try #require(UUID(uuidString: app.id))
            let forged = try JWT.sign(IdentityTokenClaims(issuer: "facegate", appId: appId, userId: UUID(uuidString: user)!, deviceId: "kiosk",
                                                          method: "face", transactionId: UUID(), issuedAt: Date(), ttl: 300),
                                      type: TokenType.identity, key: kioskKey)
            let refused = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": forged])
            #expect(refused.errorCode == "IDENTITY_TOKEN_INVALID")
            let access = try JWT.sign(AccessTokenClaims(issuer: "facegate", appId: appId, issuedAt: Date(), ttl: 600), type: TokenType.access, key: kioskKey)
            #expect(try await stack.faceLogin(access, device: "k", photo: "obama2.jpg").errorCode == "ACCESS_TOKEN_INVALID")

            let events = try await kiosk.events(session)
            #expect(events.map(\.name) == ["selfieScanCompleted", "kioskFlowCompleted"])
            #expect(events[0].data["existingUser"] as? Bool == true)
            let replayed = try await kiosk.events(session, lastEventId: events[0].id)
            #expect(replayed.map(\.name) == ["kioskFlowCompleted"])

            // A repeated selfie is answered with the session as it is, and adds nothing.
            let again = try await kiosk.selfie(session, frames: try KioskDriver.stills())
            #expect(again.string("state") == "completed")
            #expect(try await kiosk.events(session).count == 2)
        }
    }

    @Test func unknownFaceMovesToTheDocumentAndAFrontWithoutPortraitCanBeRetaken() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            let selfie = try await kiosk.selfie(session, frames: try KioskDriver.stills())
            #expect(selfie.string("state") == "idFront")
            let selfieEvent = try #require((selfie.json["events"] as? [[String: Any]])?.first)
            #expect(selfieEvent["event"] as? String == "selfieScanCompleted")

            let blank = try await kiosk.document(session, step: "id-front", image: try KioskDriver.blankCard())
            #expect(blank.status == 200)
            #expect(blank.string("state") == "idFront")
            let failed = try #require((blank.json["events"] as? [[String: Any]])?.first)
            #expect((failed["data"] as? [String: Any])?["error"] as? String == "NO_PORTRAIT")

            let front = try await kiosk.document(session, step: "id-front", image: try TestEnvironment.image("obama.jpg"))
            #expect(front.string("state") == "idBack")
            let steps = try #require(try await kiosk.get(session).json["steps"] as? [[String: Any]])
            #expect(steps.map { $0["name"] as? String } == ["selfie", "idFront", "idFront"])
            #expect(steps.map { $0["success"] as? Bool } == [true, false, true])
        }
    }
}

/// Drives kiosk sessions over HTTP as a registered kiosk tablet would: every call signed with its DPoP key.
struct KioskDriver {
    let stack: TestStack
    let app: TestStack.App
    let accessToken: String
    let kiosk: TestStack.Kiosk
    /// The kiosk's device id: its key's thumbprint.
    var device: String { kiosk.jkt }

    init(stack: TestStack, app: TestStack.App) async throws {
        self.stack = stack
        self.app = app
        accessToken = try await stack.accessToken(app)
        kiosk = try await stack.registerKiosk(app)
    }

    struct Session {
        var id: String
        var token: String
    }

    struct Event {
        var id: String
        var name: String
        var data: [String: Any]
    }

    func start() async throws -> Session {
        let reply = try await stack.call("POST", "/v1/kiosk/sessions", bearer: accessToken, kiosk: kiosk)
        guard reply.status == 201, let id = reply.string("interviewId"), let token = reply.string("interviewToken") else {
            throw TestSetupError("kiosk session not created: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return Session(id: id, token: token)
    }

    func get(_ session: Session) async throws -> TestStack.Reply {
        try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)", headers: ["X-Interview-Token": session.token], kiosk: kiosk)
    }

    func cancel(_ session: Session) async throws -> TestStack.Reply {
        try await stack.call("DELETE", "/v1/kiosk/sessions/\(session.id)", headers: ["X-Interview-Token": session.token], kiosk: kiosk)
    }

    func selfie(_ session: Session, frames: [Data], challengeId: String = "") async throws -> TestStack.Reply {
        let (body, contentType) = Self.multipart(fields: ["challengeId": challengeId], files: frames.map { ("frame", $0) })
        return try await stack.call("POST", "/v1/kiosk/sessions/\(session.id)/selfie", bearer: accessToken, body: body, contentType: contentType,
                                    headers: ["X-Interview-Token": session.token], kiosk: kiosk)
    }

    func document(_ session: Session, step: String, image: Data) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/kiosk/sessions/\(session.id)/\(step)", bearer: accessToken, body: image,
                             contentType: image.starts(with: [0x89, 0x50]) ? "image/png" : "image/jpeg",
                             headers: ["X-Interview-Token": session.token], kiosk: kiosk)
    }

    /// The whole event stream of a session that has ended (the server closes it after the final event).
    func events(_ session: Session, lastEventId: String? = nil) async throws -> [Event] {
        var headers = ["X-Interview-Token": session.token]
        if let lastEventId { headers["Last-Event-ID"] = lastEventId }
        let reply = try await stack.call("GET", "/v1/kiosk/sessions/\(session.id)/events", headers: headers, kiosk: kiosk)
        guard reply.status == 200, reply.headers["content-type"]?.hasPrefix("text/event-stream") == true else {
            throw TestSetupError("no event stream: \(reply.status)")
        }
        return Self.parseEvents(String(decoding: reply.body, as: UTF8.self))
    }

    static func parseEvents(_ text: String) -> [Event] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var id = "", name = "", data = ""
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data += line.dropFirst(6) }
            }
            guard !name.isEmpty else { return nil }
            let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
            return Event(id: id, name: name, data: object)
        }
    }

    static func multipart(fields: [String: String], files: [(String, Data)]) -> (Data, String) {
        let boundary = "fg" + UUID().uuidString
        var body = Data()
        for (name, value) in fields {
            body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        for (index, (name, data)) in files.enumerated() {
            body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(name)\(index).jpg\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
            body += data + Data("\r\n".utf8)
        }
        body += Data("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    /// Two photos of the same face, for apps whose kiosk liveness is off (the first is searched).
    static func stills() throws -> [Data] {
        [try TestEnvironment.image("obama2.jpg"), try TestEnvironment.image("obama3.jpg")]
    }

    /// A card-coloured JPEG with no face on it, made by ImageMagick.
    static func blankCard() throws -> Data {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blank-\(UUID().uuidString).jpg")
        defer { try? FileManager.default.removeItem(at: url) }
        try IDCard.runConvert(["-size", "856x540", "xc:#dfe8ef", "-fill", "#335", "-draw", "rectangle 40,40 300,380", url.path])
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw TestSetupError("ImageMagick could not draw a blank card")
        }
        return data
    }
}

@Suite struct HousekeepingTests {
    @Test func expiredSessionsEndWithAnEventAndLoseTheirBiometricData() async throws {
        try await TestStack.with(withKiosk: true, extra: ["KIOSK_SWEEP_SECONDS": "1", "FACEGATE_SWEEP_SECONDS": "1"]) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            #expect(try await kiosk.selfie(session, frames: try KioskDriver.stills()).string("state") == "idFront")
            let sealed = try await stack.database.pool.query("SELECT data->>'selfie' AS selfie FROM kiosk_sessions WHERE id = \(UUID(uuidString: session.id)!)")
            #expect(try sealed.first?.decode("selfie", as: String?.self) != nil)

            // Expire it, and a spent token id from long ago; the sweepers run every second.
            let id = UUID(uuidString: session.id)!
            _ = try await stack.database.pool.query("UPDATE kiosk_sessions SET expires_at = now() - interval '1 second' WHERE id = \(id)")
            _ = try await stack.database.pool.query("""
                INSERT INTO used_token_ids (jti, app_id, expires_at) VALUES ('old-token', \(UUID(uuidString: app.id)!), now() - interval '2 hours')
                """)
            let deadline = ContinuousClock.now + .seconds(20)
            var state: String?
            while ContinuousClock.now < deadline {
                // The stored state: the API already shows an overdue session as expired before the sweep.
                state = try await stack.database.pool.query("SELECT state FROM kiosk_sessions WHERE id = \(id)").first?.decode("state", as: String.self)
                if state == "expired" { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(state == "expired")
            #expect(try await kiosk.get(session).string("state") == "expired")
            let events = try await kiosk.events(session)
            #expect(events.map(\.name) == ["selfieScanCompleted", "kioskError"])
            #expect(events.last?.data["code"] as? String == "SESSION_EXPIRED")
            let erased = try await stack.database.pool.query("SELECT data->>'selfie' AS selfie FROM kiosk_sessions WHERE id = \(id)")
            #expect(try erased.first?.decode("selfie", as: String?.self) == nil)
            let front = try await kiosk.document(session, step: "id-front", image: try TestEnvironment.image("obama.jpg"))
            #expect(front.status == 410)
            #expect(front.errorCode == "SESSION_EXPIRED")

            var swept = false
            while ContinuousClock.now < deadline, !swept {
                swept = try await stack.database.pool.query("SELECT 1 FROM used_token_ids WHERE jti = 'old-token'").first == nil
                if !swept { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(swept)
        }
    }
}
