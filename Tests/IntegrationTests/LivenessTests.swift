import Crypto
import FaceEngine
import FaceGateCore
import FaceGateTestSupport
import Foundation
@testable import MatcherWorker
import PostgresClient
import ServiceKit
import Testing

/// Active liveness end to end: challenges from the gateway, bursts made from real photos
/// (`SyntheticFrames`), the real matcher judging them, kiosk login and face login with liveness.
@Suite(.serialized) struct LivenessTests {
    /// The burst analysis runs in a debug build on one engine: give the matcher time.
    static let extra = ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "60"]

    static func photo(_ name: String) throws -> URL {
        URL(fileURLWithPath: try TestEnvironment.value("FACEGATE_TEST_IMAGES") + "/" + name)
    }

    @Test func kioskLoginNeedsALiveBurstOfTheEnrolledFace() async throws {
        let engine = try SyntheticFrames.defaultEngine()
        try await TestStack.with(extra: Self.extra) { stack in
            let app = try await stack.createApp()
            let obama = try await stack.createUser(app, employeeNumber: "K1", name: "Barack Hussein Obama")
            #expect(try await stack.enroll(app, user: obama, photo: "obama2.jpg").status == 201)
            let token = try await stack.accessToken(app)

            // A challenge: 2–3 different actions, 120 s.
            let issued = try await stack.kioskChallenge(token, app: app, device: "kiosk-1")
            #expect(issued.status == 200)
            let challengeId = try #require(issued.string("challengeId"))
            let actions = try #require((issued.json["actions"] as? [String])?.compactMap(LivenessAction.init(rawValue:)))
            #expect((2...3).contains(actions.count))
            #expect(Set(actions).count == actions.count)
            #expect(!actions.contains(.blink), "apps on the default model (SFace) are challenged with head turns")
            #expect(issued.json["expiresIn"] as? Int == 120)

            // The enrolled person doing the asked actions is let in.
            let burst = try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: actions, engine: engine, seed: 1)
            let login = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: challengeId, frames: burst)
            #expect(login.status == 200, "\(String(decoding: login.body, as: UTF8.self))")
            let whyLogin = try await stack.why(login)
            #expect(login.json["success"] as? Bool == true, "\(whyLogin)")
            #expect(login.string("customerUUID") == obama)
            #expect(login.string("firstName") == "Barack")
            #expect(login.json["spoofAttempt"] as? Bool == false)
            #expect(login.json["interviewId"] is NSNull)
            #expect(login.json["error"] is NSNull)
            #expect(login.string("transactionId") != nil)
            let identityToken = try #require(login.string("token"))
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": identityToken])
            #expect(exchanged.status == 200)
            #expect(exchanged.string("userId") == obama)
            #expect(exchanged.string("method") == "kiosk")
            // Earned by the face at a registered kiosk: its key in `cnf`, the device, and the kiosk named.
            let kiosk = try await stack.kiosk(app, named: "kiosk-1")
            #expect(exchanged.string("deviceId") == kiosk.jkt)
            #expect(exchanged.json["amr"] as? [String] == ["face"] && exchanged.string("kioskId") == kiosk.id)

            // The same challenge again, even with fresh frames: a replay.
            let again = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: challengeId,
                                                   frames: try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: actions, engine: engine, seed: 2))
            #expect(again.status == 200)
            #expect(again.json["success"] as? Bool == false)
            #expect(again.json["spoofAttempt"] as? Bool == true)
            #expect(again.string("error") == "SPOOF_DETECTED")
            #expect(again.json["token"] is NSNull)

            // The accepted burst sent again under a fresh challenge asking the same actions: a replay.
            let replayChallenge = try await stack.storeChallenge(app, device: "kiosk-1", actions: actions)
            let replayed = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: replayChallenge, frames: burst)
            #expect(replayed.json["success"] as? Bool == false)
            #expect(replayed.json["spoofAttempt"] as? Bool == true)
            #expect(replayed.string("error") == "SPOOF_DETECTED")

            // A challenge issued to another device does not answer for this one.
            let foreign = try #require(try await stack.kioskChallenge(token, app: app, device: "kiosk-other").string("challengeId"))
            let stolen = try await stack.kioskLogin(token, app: app, device: "kiosk-2", challengeId: foreign, frames: burst)
            #expect(stolen.string("error") == "SPOOF_DETECTED")

            // A photo held up to the camera: nothing moves, no action happens.
            let stillChallenge = try await stack.kioskChallenge(token, app: app, device: "kiosk-3")
            let still = try await stack.kioskLogin(token, app: app, device: "kiosk-3", challengeId: try #require(stillChallenge.string("challengeId")),
                                                   frames: try SyntheticFrames.replayedStill(photo: try Self.photo("obama.jpg"), count: 6, engine: engine))
            #expect(still.json["success"] as? Bool == false)
            #expect(still.json["spoofAttempt"] as? Bool == true)
            #expect(still.string("error") == "SPOOF_DETECTED")

            // Asked to blink, the frames only turn the head.
            let blinkOnly = try await stack.storeChallenge(app, device: "kiosk-4", actions: [.blink])
            let turning = try await stack.kioskLogin(token, app: app, device: "kiosk-4", challengeId: blinkOnly,
                                                     frames: try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: [.turnLeft, .turnRight], engine: engine, seed: 21))
            #expect(turning.json["spoofAttempt"] as? Bool == true)
            #expect(turning.string("error") == "SPOOF_DETECTED")
            // Asked to turn right, the head turns left.
            let right = try await stack.storeChallenge(app, device: "kiosk-4", actions: [.turnRight])
            let wrongWay = try await stack.kioskLogin(token, app: app, device: "kiosk-4", challengeId: right,
                                                      frames: try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: [.turnLeft], engine: engine, seed: 22))
            #expect(wrongWay.string("error") == "SPOOF_DETECTED")

            // Two people in one burst.
            let mixedChallenge = try await stack.storeChallenge(app, device: "kiosk-5", actions: [.blink])
            var mixed = try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: [.blink], engine: engine, seed: 23)
            mixed[mixed.count - 1] = try SyntheticFrames.burst(photo: try Self.photo("biden.jpg"), actions: [], engine: engine, seed: 24)[0]
            let mixedLogin = try await stack.kioskLogin(token, app: app, device: "kiosk-5", challengeId: mixedChallenge, frames: mixed)
            #expect(mixedLogin.string("error") == "SPOOF_DETECTED")

            // (Each burst above has its own seed: a frame sent before is refused as a replay, checked above.)
            // A live burst of someone not enrolled.
            let bidenChallenge = try await stack.kioskChallenge(token, app: app, device: "kiosk-6")
            let bidenActions = try #require((bidenChallenge.json["actions"] as? [String])?.compactMap(LivenessAction.init(rawValue:)))
            let biden = try await stack.kioskLogin(token, app: app, device: "kiosk-6", challengeId: try #require(bidenChallenge.string("challengeId")),
                                                   frames: try SyntheticFrames.burst(photo: try Self.photo("biden.jpg"), actions: bidenActions, engine: engine, seed: 5))
            #expect(biden.json["success"] as? Bool == false, "\(String(decoding: biden.body, as: UTF8.self))")
            #expect(biden.json["spoofAttempt"] as? Bool == false)
            #expect(biden.string("error") == "NO_MATCH_FACE")

            // A customer onboarded by a kiosk session gets that session's interview id back…
            let interviewId = UUID()
            _ = try await stack.database.pool.query("""
                INSERT INTO kiosk_sessions (id, app_id, token_hash, state, customer_id, expires_at)
                VALUES (\(interviewId), \(UUID(uuidString: app.id)!), \([UInt8](repeating: 0, count: 32)), 'completed', \(UUID(uuidString: obama)!), now())
                """)
            let onboarded = try await stack.storeChallenge(app, device: "kiosk-1", actions: [.blink, .turnRight])
            let withInterview = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: onboarded,
                                                           frames: try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: [.blink, .turnRight], engine: engine, seed: 3))
            let whyWithInterview = try await stack.why(withInterview)
            #expect(withInterview.json["success"] as? Bool == true, "\(whyWithInterview)")
            #expect(withInterview.string("interviewId") == interviewId.uuidString.lowercased())
            let key = try HKDF.sha256(ikm: stack.signingSeed, salt: [], info: Array("facegate kiosk interview token v1".utf8), length: 32)
            let expected = Base64URL.encode(HMACSHA256.authenticationCode(key: key, data: Array(interviewId.uuidString.lowercased().utf8)))
            // …but never that session's interview token, which would open the customer's onboarding events.
            #expect(withInterview.json["interviewToken"] is NSNull)
            #expect(!String(decoding: withInterview.body, as: UTF8.self).contains(expected))

            // Every attempt was recorded as a kiosk login.
            let recorded = try await stack.database.pool.query("""
                SELECT count(*)::int AS n FROM transactions WHERE app_id = \(UUID(uuidString: app.id)!) AND kind = 'kiosk.login'
                """)
            #expect(try recorded.first?.decode("n", as: Int.self) == 10)

            // Without the kiosk module the call is refused before any matching.
            _ = try await stack.call("PATCH", "/v1/apps/\(app.id)", bearer: stack.adminKey, json: ["modules": ["kiosk": "disabled"]])
            let disabledChallenge = try await stack.storeChallenge(app, device: "kiosk-1", actions: [.blink])
            let disabled = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: disabledChallenge, frames: burst)
            #expect(disabled.status == 403)
            #expect(disabled.errorCode == "MODULE_DISABLED")
        }
    }

    @Test func faceLoginWithActiveLivenessTakesABurstNotAPhoto() async throws {
        let engine = try SyntheticFrames.defaultEngine()
        try await TestStack.with(extra: Self.extra) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "active", "kiosk": "off"]])
            let obama = try await stack.createUser(app, employeeNumber: "F1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: obama, photo: "obama2.jpg").status == 201)
            let token = try await stack.accessToken(app)

            // One photo is refused, saying what to send instead.
            let single = try await stack.faceLogin(token, device: "phone-1", photo: "obama.jpg")
            #expect(single.status == 400)
            #expect(single.errorCode == "INVALID_REQUEST")
            let message = ((single.json["error"] as? [String: Any])?["message"] as? String) ?? ""
            #expect(message.contains("liveness"))

            // A live burst: confirm the new device, then log in straight away.
            let first = try await stack.liveFaceLogin(token, device: "phone-1", photo: try Self.photo("obama.jpg"), engine: engine, seed: 1)
            let whyFirst = try await stack.why(first)
            #expect(first.string("status") == "CONFIRM_REQUIRED", "\(whyFirst)")
            let confirmed = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                                 json: ["confirmationId": try #require(first.string("confirmationId")), "employeeNumber": "F1"],
                                                 headers: ["X-Device-Id": "phone-1"])
            #expect(confirmed.string("status") == "SUCCESS")
            let second = try await stack.liveFaceLogin(token, device: "phone-1", photo: try Self.photo("obama.jpg"), engine: engine, seed: 2)
            let whySecond = try await stack.why(second)
            #expect(second.status == 200, "\(whySecond)")
            #expect(second.string("status") == "SUCCESS")
            #expect(second.string("userId") == obama)

            // A still photo as the burst fails the check.
            let challenge = try await stack.challenge(token, device: "phone-1")
            let still = try await stack.call("POST", "/v1/face-login", bearer: token,
                                             body: Multipart.body(challengeId: try #require(challenge.string("challengeId")),
                                                                  frames: try SyntheticFrames.replayedStill(photo: try Self.photo("obama.jpg"), count: 4, engine: engine)),
                                             contentType: Multipart.contentType, headers: ["X-Device-Id": "phone-1"])
            #expect(still.status == 422)
            #expect(still.errorCode == "SPOOF_DETECTED")

            // Kiosk liveness off: frames without a challenge are identified as they are.
            let kiosk = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: nil,
                                                   frames: try SyntheticFrames.replayedStill(photo: try Self.photo("obama.jpg"), count: 2, engine: engine))
            #expect(kiosk.json["success"] as? Bool == true, "\(String(decoding: kiosk.body, as: UTF8.self))")
            #expect(kiosk.string("customerUUID") == obama)

            // With kiosk liveness off one photo is enough; a frame that is not an image is refused.
            let oneFrame = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: nil, frames: [try TestEnvironment.image("obama.jpg")])
            #expect(oneFrame.json["success"] as? Bool == true, "\(String(decoding: oneFrame.body, as: UTF8.self))")
            #expect(oneFrame.string("customerUUID") == obama)
            // Active liveness (face login in this app) still needs a burst: one frame is refused before its challenge is looked at.
            let oneFrameLogin = try await stack.call("POST", "/v1/face-login", bearer: token,
                                                     body: Multipart.body(challengeId: "lc_unused", frames: [try TestEnvironment.image("obama.jpg")]),
                                                     contentType: Multipart.contentType, headers: ["X-Device-Id": "phone-1"])
            #expect(oneFrameLogin.status == 400 && oneFrameLogin.errorCode == "INVALID_REQUEST", "\(String(decoding: oneFrameLogin.body, as: UTF8.self))")
            let text = try await stack.kioskLogin(token, app: app, device: "kiosk-1", challengeId: nil,
                                                  frames: [try TestEnvironment.image("obama.jpg"), Data("not a photo".utf8)])
            #expect(text.json["success"] as? Bool == false)
            #expect(text.string("error") == "IMAGE_FORMAT_ERROR")
        }
    }

    @Test func shardedGalleryAnswersALivenessLoginOnce() async throws {
        let engine = try SyntheticFrames.defaultEngine()
        let sharded = Self.extra.merging(["FACEGATE_MATCHER_SHARDS": "2", "MATCHER_SHARD_COUNT": "2", "MATCHER_SHARD_INDEX": "0"]) { _, new in new }
        try await TestStack.with(extra: sharded) { stack in
            var environment = stack.environment(for: "matcher-worker")
            environment["MATCHER_SHARD_INDEX"] = "1"
            let second = try MatcherWorker(configuration: try MatcherConfiguration(environment: Environment(environment)))
            let run = Task { _ = try? await second.group.run(handleSignals: false) }
            defer { second.group.requestStop(reason: "test finished") }
            try await second.jobs.waitUntilAssigned(timeout: .seconds(60))

            // dlib: the burst below blinks, and only dlib apps are challenged with blinks.
            let app = try await stack.createApp(extra: ["faceModel": "dlib-resnet-v1"])
            let obama = try await stack.createUser(app, employeeNumber: "S1", name: "Barack Obama")
            let biden = try await stack.createUser(app, employeeNumber: "S2", name: "Joe Biden")
            #expect(try await stack.enroll(app, user: obama, photo: "obama2.jpg").status == 201)
            #expect(try await stack.enroll(app, user: biden, photo: "biden.jpg").status == 201)
            let token = try await stack.accessToken(app)

            // One shard analyses the burst (each frame embedded once); both search the most frontal frame's sealed template.
            func embeddings() -> Double { [stack.matcher!, second].map(\.embeddings).reduce(0, +) }
            for (device, photo, expected) in [("k-1", "obama.jpg", obama), ("k-2", "biden.jpg", biden)] {
                let challenge = try await stack.storeChallenge(app, device: device, actions: [.turnLeft, .blink])
                let frames = try SyntheticFrames.burst(photo: try Self.photo(photo), actions: [.turnLeft, .blink], engine: engine)
                let before = embeddings()
                let login = try await stack.kioskLogin(token, app: app, device: device, challengeId: challenge, frames: frames)
                let whyLogin = try await stack.why(login)
                #expect(login.json["success"] as? Bool == true, "\(photo): \(whyLogin)")
                #expect(login.string("customerUUID") == expected, "\(photo)")
                #expect(embeddings() - before == Double(frames.count), "\(photo)")
            }
            let stillChallenge = try await stack.storeChallenge(app, device: "k-3", actions: [.blink])
            let still = try await stack.kioskLogin(token, app: app, device: "k-3", challengeId: stillChallenge,
                                                   frames: try SyntheticFrames.replayedStill(photo: try Self.photo("obama.jpg"), count: 3, engine: engine))
            #expect(still.string("error") == "SPOOF_DETECTED")
            second.group.requestStop(reason: "test finished")
            await run.value
        }
    }

    /// Challenges are random: every order of two or three actions a challenge can ask must pass with a live burst.
    @Test func everyChallengeOrderPassesWithALiveBurst() async throws {
        let engine = try SyntheticFrames.defaultEngine()
        let all = LivenessAction.allCases
        var orders: [[LivenessAction]] = []
        for a in all { for b in all where b != a {
            orders.append([a, b])
            for c in all where c != a && c != b { orders.append([a, b, c]) }
        } }
        #expect(orders.count == 12)
        try await TestStack.with(extra: Self.extra) { stack in
            // dlib apps are the ones asked every order, blinks included.
            let app = try await stack.createApp(extra: ["faceModel": "dlib-resnet-v1"])
            let obama = try await stack.createUser(app, employeeNumber: "O1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: obama, photo: "obama2.jpg").status == 201)
            let token = try await stack.accessToken(app)
            for (index, actions) in orders.enumerated() {
                let challenge = try await stack.storeChallenge(app, device: "kiosk-\(index)", actions: actions)
                let frames = try SyntheticFrames.burst(photo: try Self.photo("obama.jpg"), actions: actions, engine: engine, seed: UInt64(index + 10))
                let login = try await stack.kioskLogin(token, app: app, device: "kiosk-\(index)", challengeId: challenge, frames: frames)
                let whyLogin = try await stack.why(login)
                #expect(login.json["success"] as? Bool == true, "\(actions.map(\.rawValue)): \(whyLogin)")
            }
        }
    }

    /// Without dlib's 68-point model (trained on iBUG 300-W, not for commercial use) an SFace matcher still judges
    /// head turns, from YuNet's five points. The burst is made of real photos of turned heads (obama2.jpg turns to his
    /// right, its mirror image to his left): YuNet's points follow a real turn but not the synthetic warps the other
    /// tests use, which move dlib's landmarks, not the head. A live burst passes its challenge, the same burst fails
    /// the reverse order, and a held-up still passes no turn.
    @Test func headTurnsAreJudgedWithoutThe68PointModel() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("yunet-only-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let models = try TestEnvironment.value("FACEGATE_MODEL_DIR")
        for file in ["face_detection_yunet_2023mar.onnx", "face_recognition_sface_2021dec.onnx"] {
            try FileManager.default.createSymbolicLink(atPath: directory + "/" + file, withDestinationPath: models + "/" + file)
        }
        var configuration = FaceEngineConfiguration(modelDirectory: directory)
        configuration.model = .sface2021dec
        let yunetOnly = try FaceEngine(configuration: configuration)
        func judge(_ frames: [Data], _ actions: [LivenessAction]) throws -> LivenessReport {
            let analyses = try frames.map { try yunetOnly.analyze(Array($0), options: FaceAnalysisOptions(embeddings: true, landmarks68: true, maxFaces: 1)) }
            #expect(analyses.allSatisfy { $0.faces.first?.landmarks68 == nil }, "no 68 points without the model")
            print("yaw from YuNet's points:", analyses.map { String(format: "%.1f", $0.faces.first?.quality.yaw ?? .nan) })
            return LivenessAnalyzer.evaluate(frames: frames, analyses: analyses, actions: actions, sameFaceDistance: FaceModel.sface2021dec.defaultThreshold)
        }
        let frontal = try Self.photo("obama.jpg"), turned = try Self.photo("obama2.jpg")
        let burst = [try SyntheticFrames.frame(photo: frontal, quality: 92), try SyntheticFrames.frame(photo: turned, mirrored: true),
                     try SyntheticFrames.frame(photo: frontal, quality: 88), try SyntheticFrames.frame(photo: turned),
                     try SyntheticFrames.frame(photo: frontal, quality: 84)]
        let live = try judge(burst, [.turnLeft, .turnRight])
        #expect(live.passed, "\(live.reasons)")
        #expect(try judge(burst, [.turnRight, .turnLeft]).passed == false, "the turns in the other order")
        let still = try (0..<5).map { try SyntheticFrames.frame(photo: frontal, quality: 92 - $0 * 2) }
        #expect(try judge(still, [.turnLeft]).passed == false)
    }

    @Test func livenessJobsFromOlderSendersDecode() throws {
        let job = FaceJob(appId: UUID(), .liveness(FaceJob.Burst(frames: [Data([1, 2])], actions: [.blink], identify: true)))
        var object = try #require(try JSONSerialization.jsonObject(with: Data(try FaceGateJSON.encode(job))) as? [String: Any])
        #expect(object["identify"] as? Bool == true)
        object.removeValue(forKey: "identify")
        let older = try FaceGateJSON.decode(FaceJob.self, from: Array(try JSONSerialization.data(withJSONObject: object)))
        #expect(older.payload == .liveness(FaceJob.Burst(frames: [Data([1, 2])], actions: [.blink], identify: false)))
        let result = try FaceGateJSON.decode(FaceJobResult.self, from: Array(#"{"outcome":"LIVE","candidates":[],"shardIndex":0,"shardCount":1,"timings":{}}"#.utf8))
        #expect(result.bestFrameIndex == nil)
    }
}

enum Multipart {
    static let boundary = "facegate-test-boundary-7c1e"
    static var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    static func body(challengeId: String?, frames: [Data]) -> Data {
        var body = Data()
        func append(_ text: String) { body.append(Data(text.utf8)) }
        if let challengeId {
            append("--\(boundary)\r\nContent-Disposition: form-data; name=\"challengeId\"\r\n\r\n\(challengeId)\r\n")
        }
        for (index, frame) in frames.enumerated() {
            append("--\(boundary)\r\nContent-Disposition: form-data; name=\"frame\"; filename=\"frame\(index).jpg\"\r\nContent-Type: image/jpeg\r\n\r\n")
            body.append(frame)
            append("\r\n")
        }
        append("--\(boundary)--\r\n")
        return body
    }
}

extension TestStack {
    /// The reply and, for a recorded call, the transaction's detail (it names why a burst was not live).
    func why(_ reply: Reply) async throws -> String {
        let body = String(decoding: reply.body, as: UTF8.self)
        let transaction = reply.string("transactionId") ?? ((reply.json["error"] as? [String: Any])?["transactionId"] as? String)
        guard let transaction, let id = UUID(uuidString: transaction) else { return body }
        let rows = try await database.pool.query("SELECT detail::text AS detail FROM transactions WHERE id = \(id)")
        return body + " detail: " + ((try rows.first?.decode("detail", as: String.self)) ?? "none")
    }

    func challenge(_ token: String, device: String) async throws -> Reply {
        try await call("GET", "/v1/liveness/challenges", bearer: token, headers: ["X-Device-Id": device])
    }

    /// A challenge with chosen actions, written straight into the table the gateway reads.
    /// A challenge for the registered kiosk `device` names (`kiosk(_:named:)`), as its signed request would get.
    func kioskChallenge(_ token: String, app: App, device: String) async throws -> Reply {
        try await call("GET", "/v1/liveness/challenges", bearer: token, kiosk: try await kiosk(app, named: device))
    }

    /// A challenge with chosen actions for the registered kiosk `device` names, written straight into the table the gateway reads.
    func storeChallenge(_ app: App, device: String, actions: [LivenessAction]) async throws -> String {
        let device = try await kiosk(app, named: device).jkt
        let id = "lc_test_" + UUID().uuidString.lowercased()
        let data = String(decoding: try JSONEncoder().encode(["actions": actions.map(\.rawValue)]), as: UTF8.self)
        _ = try await database.pool.query("""
            INSERT INTO one_time_challenges (id, app_id, purpose, subject, data, expires_at)
            VALUES (\(id), \(UUID(uuidString: app.id)!), 'liveness', \(device), \(data)::jsonb, now() + interval '120 seconds')
            """)
        return id
    }

    /// Kiosk login signed by the registered kiosk `device` names.
    func kioskLogin(_ token: String, app: App, device: String, challengeId: String?, frames: [Data]) async throws -> Reply {
        try await call("POST", "/v1/kiosk/login", bearer: token, body: Multipart.body(challengeId: challengeId, frames: frames),
                       contentType: Multipart.contentType, kiosk: try await kiosk(app, named: device))
    }

    /// Face login with a fresh challenge answered by a burst made from `photo`.
    func liveFaceLogin(_ token: String, device: String, photo: URL, engine: FaceEngine, seed: UInt64) async throws -> Reply {
        let issued = try await challenge(token, device: device)
        guard let id = issued.string("challengeId"), let names = issued.json["actions"] as? [String] else {
            throw TestSetupError("no challenge: \(issued.status)")
        }
        let frames = try SyntheticFrames.burst(photo: photo, actions: names.compactMap(LivenessAction.init(rawValue:)), engine: engine, seed: seed)
        return try await call("POST", "/v1/face-login", bearer: token, body: Multipart.body(challengeId: id, frames: frames),
                              contentType: Multipart.contentType, headers: ["X-Device-Id": device])
    }
}
