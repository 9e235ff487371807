import FaceGateContracts
import FaceGateCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPServer
import Synchronization
import Testing

@testable import FaceGateClient

/// The kiosk event stream's transport rules, which the real orchestrator cannot be made to break on
/// demand: a stream that drops mid-session, a replay that repeats an event, lines split across chunks.
/// A real HTTP server (the project's libmicrohttpd server) plays the session's stream as the kiosk contract
/// words it; `KioskSession` must reconnect with `Last-Event-ID` and deliver each event exactly once.
@Suite struct ClientEventStreamTests {
    final class KioskRecorder: KioskFlowDelegate {
        private let log = Mutex<[String]>([])
        var names: [String] { log.withLock { $0 } }
        private func add(_ name: String) { log.withLock { $0.append(name) } }
        func onSelfieScanCompleted(_ session: KioskSession, _ event: SelfieScanCompleted) { add("selfie existing=\(event.existingUser ?? false)") }
        func onIdFrontCompleted(_ session: KioskSession, _ event: KioskDocumentStep) { add("front \(event.error?.code ?? "ok")") }
        func onIdBackCompleted(_ session: KioskSession, _ event: KioskDocumentStep) { add("back") }
        func onIdProcessed(_ session: KioskSession, _ event: IdProcessed) { add("processed \(event.ocrData?.surname ?? "-")") }
        func onFaceMatchCompleted(_ session: KioskSession, _ event: FaceMatchCompleted) { add("match \(event.distance ?? -1)") }
        func onKioskFlowCompleted(_ session: KioskSession, _ event: KioskFlowCompleted) { add("completed \(event.customerUUID ?? "-")") }
        func onKioskError(_ session: KioskSession, _ error: KioskErrorEvent) { add("error \(error.code)") }
        func userCancelledSession(_ session: KioskSession) { add("cancelled") }
    }

    static let events: [(Int, String, String)] = [
        (1, "selfieScanCompleted", #"{"success":true,"existingUser":false,"spoofAttempt":false}"#),
        (2, "idFrontCompleted", #"{"success":false,"error":"NO_PORTRAIT"}"#),
        (3, "idFrontCompleted", #"{"success":true}"#),
        (4, "idBackCompleted", #"{"success":true}"#),
        (5, "idProcessed", #"{"success":true,"ocrData":{"documentType":"P","issuingState":"UTO","surname":"OBAMA","givenNames":"BARACK","nationality":"UTO","sex":"M","expiryDate":"2030-01-01"}}"#),
        (6, "faceMatchCompleted", #"{"success":true,"distance":0.31}"#),
        (7, "kioskFlowCompleted", "{\"success\":true,\"customerUUID\":\"c-1\",\n\"existingUser\":false}"),
    ]

    /// `id`/`event`/`data` lines; multi-line data where the JSON has a newline.
    static func frame(_ event: (Int, String, String), lineEnd: String) -> [UInt8] {
        var text = "id: \(event.0)\(lineEnd)event: \(event.1)\(lineEnd)"
        for line in event.2.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\(lineEnd)" }
        return Array((text + lineEnd).utf8)
    }

    @Test func reconnectsWithLastEventIdAndDeliversEachEventOnce() async throws {
        let seenLastEventIds = Mutex<[String]>([])
        let router = Router()
        router.add("POST", "/v1/kiosk/sessions") { _ in
            .json(["interviewId": "iv-1", "interviewToken": "secret-token"], status: 201)
        }
        router.add("GET", "/v1/kiosk/sessions/{id}") { _ in
            .json(["interviewId": "iv-1", "state": "idBack"])
        }
        router.add("GET", "/v1/kiosk/sessions/{id}/events") { request in
            guard request.headers["X-Interview-Token"] == "secret-token" else {
                return .json(["error": ["code": "UNAUTHORIZED", "message": "wrong interview token"]], status: 401)
            }
            let last = request.headers["Last-Event-ID"]
            seenLastEventIds.withLock { $0.append(last ?? "") }
            let stream = AsyncStream<[UInt8]> { continuation in
                if last == nil {
                    // First connection: a comment, then two events split mid-line across chunks, then a drop.
                    var bytes = Array(": hello\n\n".utf8) + Self.frame(Self.events[0], lineEnd: "\r\n") + Self.frame(Self.events[1], lineEnd: "\n")
                    bytes += Array("retry: 50\n\n".utf8)
                    let cut = bytes.count / 2 + 3
                    continuation.yield(Array(bytes[..<cut]))
                    continuation.yield(Array(bytes[cut...]))
                } else {
                    // Reconnection: replays from the id given, repeating event 2 once more (must not reach the app twice).
                    let from = (Int(last!) ?? 0) - 1
                    for event in Self.events where event.0 > from { continuation.yield(Self.frame(event, lineEnd: "\r")) }
                }
                continuation.finish()
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")], body: .stream(stream))
        }
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), router: router)
        try server.start()
        defer { Task { await server.shutdown(gracePeriod: .seconds(1)) } }

        let configuration = FaceGateConfiguration(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, appId: UUID().uuidString,
                                                  deviceId: "kiosk-1", accessToken: "token", eventStreamReconnectDelay: .seconds(5))
        let client = KioskClient(configuration: configuration)
        let recorder = KioskRecorder()
        let session = try await client.startKioskFlow(delegate: recorder)
        #expect(session.interviewId == "iv-1")
        await session.waitUntilStreamEnds()
        #expect(recorder.names == ["selfie existing=false", "front NO_PORTRAIT", "front ok", "back", "processed OBAMA", "match 0.31", "completed c-1"])
        #expect(session.lastEventId == "7")
        #expect(session.reconnectCount == 1)
        #expect(seenLastEventIds.withLock { $0 } == ["", "2"])
        var sequenced: [String] = []
        for await event in session.events { sequenced.append(event.name) }
        #expect(sequenced.count == 7)

        // A wrong interview token is not retried: the app hears it once.
        let wrong = client.resumeKioskFlow(interviewId: "iv-1", interviewToken: "nope", delegate: recorder)
        await wrong.waitUntilStreamEnds()
        #expect(recorder.names.last == "error UNAUTHORIZED")
        #expect(recorder.names.count == 8)
    }

    /// Step answers carry the events either flattened (`{event, success, …}`) or as stored (`{seq, event, data, at}`).
    @Test func readsStepEventsInBothShapes() throws {
        let body = #"""
            {"interviewId":"iv","state":"idFront","steps":[{"name":"selfie","success":true,"at":"2026-12-02T10:00:00.000Z"}],"result":null,
             "events":[{"seq":1,"event":"selfieScanCompleted","data":{"success":true,"existingUser":false},"at":"2026-12-02T10:00:00.000Z"},
                       {"event":"idFrontCompleted","success":false,"error":"NO_PORTRAIT","message":"no face on the front"}]}
            """#
        let step = try KioskStepResult.decode(HTTPAnswer(status: 200, body: Data(body.utf8)))
        #expect(step.state == "idFront")
        #expect(step.steps.map(\.name) == ["selfie"])
        #expect(step.events == [.selfieScanCompleted(SelfieScanCompleted(success: true, existingUser: false)),
                                .idFrontCompleted(KioskDocumentStep(success: false, error: KioskStepError(code: "NO_PORTRAIT"),
                                                                    message: "no face on the front"))])
    }

    /// The client keeps kiosk states and event names as strings of its own types (`KioskSessionStatus`,
    /// `KioskStepResult`), not the server's `KioskSessionView`, so that an app on an older SDK still reads a session of a
    /// newer server. They must read everything the server's contract writes: every state, every event, the result.
    @Test func readsEverySessionAndEventTheServerWrites() throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000.125)
        let events = KioskEventName.allCases.enumerated().map { index, name in
            FaceGateContracts.KioskEvent(seq: index + 1, event: name, data: name == .kioskError
                ? KioskEventData(message: "the session expired", code: .sessionExpired)
                : KioskEventData(success: true, existingUser: false, customerUUID: UUID()), at: at)
        }
        for state in KioskState.allCases {
            let result = state == .completed ? KioskResult(success: true, customerUUID: UUID(), token: "token", name: "N", existingUser: false) : nil
            let view = KioskSessionView(interviewId: UUID(), state: state, steps: [.init(name: "selfie", success: true, at: at),
                                                                                  .init(name: "idFront", success: false, at: at)],
                                        result: result, expiresAt: at, events: events)
            let answer = HTTPAnswer(status: 200, body: Data(try FaceGateJSON.encode(view)))
            let status = try answer.decode(KioskSessionStatus.self)
            #expect(status.interviewId == view.interviewId && status.state == state.rawValue && status.isTerminal == state.isFinal)
            #expect(status.steps.map(\.name) == ["selfie", "idFront"] && status.steps.map(\.success) == [true, false])
            #expect(status.steps.allSatisfy { $0.at != nil } && status.expiresAt != nil)
            #expect(status.result?.customerUUID == result?.customerUUID && status.result?.token == result?.token)
            let step = try KioskStepResult.decode(answer)
            #expect(step.state == state.rawValue && step.events.map(\.name) == KioskEventName.allCases.map(\.rawValue))
            #expect(!step.events.contains { if case .unknown = $0 { true } else { false } }, "every event the server writes is one the client knows")
            #expect(step.events.contains(.kioskError(KioskErrorEvent(code: "SESSION_EXPIRED", message: "the session expired"))))
        }
    }

    @Test func parsesTheEventStreamFormat() {
        var parser = ServerSentEventParser()
        var out = parser.feed(Array("data: a\r".utf8))
        out += parser.feed(Array("\ndata:b\n\nid: 9\nevent: x\ndata\n\n: note\nid\ndata: c\n\nevent: lost\n\n".utf8))
        #expect(out == [ServerSentEvent(id: nil, event: "message", data: "a\nb"), ServerSentEvent(id: "9", event: "x", data: ""),
                        ServerSentEvent(id: nil, event: "message", data: "c")])
        _ = parser.feed(Array("retry: 1500\nretry: soon\n".utf8))
        #expect(parser.retry == 1500)
    }
}

/// The client's envelope against the server's: what one seals the other opens, and a forged tag is refused
/// before decryption.
@Suite struct ClientEnvelopeTests {
    @Test func clientAndServerEnvelopesInteroperate() throws {
        let appId = UUID()
        let key = Array(Data((0..<16).map { UInt8($0 * 7) }))
        let cipher = try CTIDEnvelopeCipher(appId: appId.uuidString, key: key)
        let sealed = try cipher.seal(Array("{\"hello\":\"张三\"}".utf8))
        #expect(try sealed.open(expectedAppId: appId, key: key) == Array("{\"hello\":\"张三\"}".utf8))

        let answer = try CTIDEnvelope.seal(Array("answer".utf8), appId: appId, key: key)
        #expect(try cipher.open(answer) == Array("answer".utf8))

        var forged = answer
        var tag = Array(Data(base64Encoded: forged.mac)!)
        tag[0] ^= 1
        forged.mac = Data(tag).base64EncodedString()
        #expect(throws: FaceGateError.answerEnvelopeRejected) { try cipher.open(forged) }
        var otherApp = answer
        otherApp.appId = UUID().uuidString.lowercased()
        #expect(throws: FaceGateError.answerEnvelopeRejected) { try cipher.open(otherApp) }
    }
}

/// The client's transport on its own: what a call leaves behind in its URLSession.
@Suite struct ClientTransportTests {
    final class Invalidation: NSObject, URLSessionDelegate, Sendable {
        let ended = Mutex(false)
        func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) { ended.withLock { $0 = true } }
    }

    /// A call whose task is cancelled before it starts is never sent, and leaves no data task suspended in the session
    /// (where it would hold the session's invalidation, and so the session, forever).
    @Test func aCallCancelledBeforeItStartsLeavesNothingBehind() async throws {
        let invalidation = Invalidation()
        // Nothing listens on the discard port: a call that did start would fail with a transport error instead.
        let transport = Transport(configuration: FaceGateConfiguration(baseURL: URL(string: "http://127.0.0.1:9")!, appId: "app",
                                                                       deviceId: "phone"),
                                  sessionDelegate: invalidation)
        let call = Task { () async -> FaceGateError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(FaceGateError) {
                _ = try await transport.perform(URLRequest(url: URL(string: "http://127.0.0.1:9/v1/ping")!))
                return nil
            } catch {
                return error
            }
        }
        #expect(await call.value == FaceGateError.cancelled)
        transport.session.finishTasksAndInvalidate()
        let deadline = ContinuousClock.now + .seconds(5)
        while !invalidation.ended.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(invalidation.ended.withLock { $0 }, "the session waits on a task that never ran")
    }
}
