import FaceGateClient
import FaceGateCore
import FaceGateTestSupport
import Foundation
import IdentityRecords
import Synchronization
import Testing

/// The kiosk calls of the client library against the real gateway and kiosk-orchestrator: the session's
/// events reach the delegate from the server's event stream, each once and in order.
@Suite(.serialized, .sharedStack(withKiosk: true)) struct ClientKioskTests {
    final class Recorder: KioskFlowDelegate {
        private let log = Mutex<[String]>([])
        private let completion = Mutex<KioskFlowCompleted?>(nil)
        var names: [String] { log.withLock { $0 } }
        var completed: KioskFlowCompleted? { completion.withLock { $0 } }
        private func add(_ name: String) { log.withLock { $0.append(name) } }
        func onSelfieScanCompleted(_ session: KioskSession, _ event: SelfieScanCompleted) {
            add("selfieScanCompleted success=\(event.success) existing=\(event.existingUser ?? false)")
        }
        func onIdFrontCompleted(_ session: KioskSession, _ event: KioskDocumentStep) { add("idFrontCompleted \(event.error?.code ?? "ok")") }
        func onIdBackCompleted(_ session: KioskSession, _ event: KioskDocumentStep) { add("idBackCompleted \(event.error?.code ?? "ok")") }
        func onIdProcessed(_ session: KioskSession, _ event: IdProcessed) { add("idProcessed \(event.success)") }
        func onFaceMatchCompleted(_ session: KioskSession, _ event: FaceMatchCompleted) { add("faceMatchCompleted \(event.success)") }
        func onKioskFlowCompleted(_ session: KioskSession, _ event: KioskFlowCompleted) {
            completion.withLock { $0 = event }
            add("kioskFlowCompleted \(event.success)")
        }
        func onKioskError(_ session: KioskSession, _ error: KioskErrorEvent) { add("kioskError \(error.code)") }
        func userCancelledSession(_ session: KioskSession) { add("userCancelledSession") }
    }

    /// A kiosk tablet: its own device key (a file, as on a real kiosk), registered to the app by the operator.
    static func client(_ stack: TestStack, _ app: TestStack.App, device: String) async throws -> KioskClient {
        let key = DeviceKey(file: FileManager.default.temporaryDirectory.appendingPathComponent("kiosk-\(UUID().uuidString).p256.der"))
        _ = try await stack.registerKiosk(app, name: device, jkt: try key.thumbprint())
        var configuration = FaceGateConfiguration(baseURL: URL(string: stack.baseURL)!, appId: app.id, deviceId: device,
                                                  refreshAccessToken: { try await stack.accessToken(app) })
        configuration.deviceKey = key
        return KioskClient(configuration: configuration)
    }

    /// Apps with kiosk liveness off take any burst; the challenge id is then not checked.
    static let noChallenge = LivenessChallenge(challengeId: "", actions: [], expiresIn: 0)

    @Test func knownFaceCompletesTheFlowAndTheDelegateHearsItFromTheStream() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
            let user = try await stack.createUser(app, employeeNumber: "C-1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let kiosk = try await Self.client(stack, app, device: "kiosk-a")
            let recorder = Recorder()
            let session = try await kiosk.startKioskFlow(delegate: recorder)
            #expect(UUID(uuidString: session.interviewId) != nil)

            let step = try await session.submitSelfie(frames: try KioskDriver.stills(), challenge: Self.noChallenge)
            #expect(step.state == "completed")
            #expect(step.result?.customerUUID == user)
            #expect(step.events.map(\.name) == ["selfieScanCompleted", "kioskFlowCompleted"])

            await session.waitUntilStreamEnds()
            #expect(recorder.names == ["selfieScanCompleted success=true existing=true", "kioskFlowCompleted true"])
            let token = try #require(recorder.completed?.token)
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": token])
            #expect(exchanged.status == 200)
            #expect(exchanged.string("userId") == user)
            #expect(exchanged.string("method") == "kiosk")
            let status = try await session.status()
            #expect(status.isTerminal)
            #expect(status.result?.existingUser == true)
        }
    }

    @Test func aRetakenFrontAndACancelReachTheDelegateOnceEach() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp(extra: ["liveness": ["faceLogin": "off", "kiosk": "off"]])
            let kiosk = try await Self.client(stack, app, device: "kiosk-b")
            let recorder = Recorder()
            let session = try await kiosk.startKioskFlow(delegate: recorder)

            // Out of order: the back before the selfie.
            do {
                _ = try await session.submitIdBack(image: try TestEnvironment.image("obama.jpg"))
                Issue.record("the back was accepted before the selfie")
            } catch let error as FaceGateError {
                #expect(error.code == "CONFLICT")
                #expect(error.server?.httpStatus == 409)
            }
            #expect(try await session.submitSelfie(frames: try KioskDriver.stills(), challenge: Self.noChallenge).state == "idFront")
            let blank = try await session.submitIdFront(image: try KioskDriver.blankCard())
            #expect(blank.state == "idFront")
            guard case .idFrontCompleted(let failed)? = blank.events.first else {
                Issue.record("step events: \(blank.events)")
                return
            }
            #expect(failed.error?.code == "NO_PORTRAIT")
            #expect(try await session.submitIdFront(image: try TestEnvironment.image("obama.jpg")).state == "idBack")
            try await session.cancel()
            await session.waitUntilStreamEnds()
            #expect(recorder.names == ["selfieScanCompleted success=true existing=false", "idFrontCompleted NO_PORTRAIT",
                                       "idFrontCompleted ok", "userCancelledSession"])
            #expect(try await session.status().state == "cancelled")

            // Attaching again replays what came after the given id, once.
            let replayed = Recorder()
            let again = kiosk.resumeKioskFlow(interviewId: session.interviewId, interviewToken: session.interviewToken,
                                              lastEventId: "2", delegate: replayed)
            await again.waitUntilStreamEnds()
            #expect(replayed.names == ["idFrontCompleted ok", "userCancelledSession"])

            // A wrong interview token.
            let wrong = Recorder()
            let intruder = kiosk.resumeKioskFlow(interviewId: session.interviewId, interviewToken: "not-the-token", delegate: wrong)
            await intruder.waitUntilStreamEnds()
            #expect(wrong.names == ["kioskError UNAUTHORIZED"])
        }
    }

    @Test func kioskLoginWithALivenessChallenge() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "C-2", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama2.jpg").status == 201)
            let kiosk = try await Self.client(stack, app, device: "kiosk-c")
            let challenge = try await kiosk.livenessChallenge()
            #expect((2...3).contains(challenge.actions.count))
            // A still photo repeated is no live person.
            let still = Array(repeating: try TestEnvironment.image("obama2.jpg"), count: 4)
            let spoof = try await kiosk.startKioskLogin(frames: still, challenge: challenge)
            #expect(!spoof.success)
            #expect(spoof.spoofAttempt)
            // The challenge is single use.
            let reused = try await kiosk.startKioskLogin(frames: still, challenge: challenge)
            #expect(reused.spoofAttempt)
            // A burst doing what a fresh challenge asks logs the customer in.
            let live = try await kiosk.livenessChallenge()
            let photo = URL(fileURLWithPath: try TestEnvironment.value("FACEGATE_TEST_IMAGES") + "/obama.jpg")
            let frames = try SyntheticFrames.burst(photo: photo, actions: live.actions,
                                                   seed: .random(in: 1...1_000_000))
            let login = try await kiosk.startKioskLogin(frames: frames, challenge: live)
            #expect(login.success, "\(login)")
            #expect(!login.spoofAttempt)
            #expect(login.customerUUID == user)
            #expect(login.firstName == "Barack")
        }
    }
}
