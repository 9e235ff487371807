import FaceGateContracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// What a kiosk flow reports, one callback per event of the session's event stream, each event once and
/// in stream order. Called on an arbitrary thread. Every method has an empty default.
public protocol KioskFlowDelegate: AnyObject, Sendable {
    func onSelfieScanCompleted(_ session: KioskSession, _ event: SelfieScanCompleted)
    func onIdFrontCompleted(_ session: KioskSession, _ event: KioskDocumentStep)
    func onIdBackCompleted(_ session: KioskSession, _ event: KioskDocumentStep)
    func onIdProcessed(_ session: KioskSession, _ event: IdProcessed)
    func onFaceMatchCompleted(_ session: KioskSession, _ event: FaceMatchCompleted)
    func onKioskFlowCompleted(_ session: KioskSession, _ event: KioskFlowCompleted)
    /// A `kioskError` event, or the event stream could not be kept open (then `code` is this library's
    /// `FaceGateError.code`, e.g. `TRANSPORT`, `UNAUTHORIZED`).
    func onKioskError(_ session: KioskSession, _ error: KioskErrorEvent)
    func userCancelledSession(_ session: KioskSession)
}

extension KioskFlowDelegate {
    public func onSelfieScanCompleted(_ session: KioskSession, _ event: SelfieScanCompleted) {}
    public func onIdFrontCompleted(_ session: KioskSession, _ event: KioskDocumentStep) {}
    public func onIdBackCompleted(_ session: KioskSession, _ event: KioskDocumentStep) {}
    public func onIdProcessed(_ session: KioskSession, _ event: IdProcessed) {}
    public func onFaceMatchCompleted(_ session: KioskSession, _ event: FaceMatchCompleted) {}
    public func onKioskFlowCompleted(_ session: KioskSession, _ event: KioskFlowCompleted) {}
    public func onKioskError(_ session: KioskSession, _ error: KioskErrorEvent) {}
    public func userCancelledSession(_ session: KioskSession) {}
}

/// Kiosk calls: liveness challenges, returning-customer login, and the onboarding flow
/// (selfie → ID front → ID back) driven by the session's event stream. A kiosk is a registered device: every call is
/// signed with the configuration's `deviceKey`, whose thumbprint (`DeviceKey.thumbprint()`) an operator registers
/// (`facegate kiosk add APP_ID NAME JKT`); anything else is refused with `KIOSK_NOT_REGISTERED`.
public final class KioskClient: Sendable {
    let transport: Transport

    public init(configuration: FaceGateConfiguration) {
        transport = Transport(configuration: configuration)
    }

    public func setAccessToken(_ token: String) { transport.setAccessToken(token) }

    /// `GET /v1/liveness/challenges`.
    public func livenessChallenge() async throws(FaceGateError) -> LivenessChallenge {
        try await transport.send("GET", "/v1/liveness/challenges").decode(LivenessChallenge.self)
    }

    /// `POST /v1/kiosk/login` with the frames captured while the person performed `challenge`'s actions.
    /// A face that is not let in is a result with `success == false`, not a thrown error.
    public func startKioskLogin(frames: [Data], challenge: LivenessChallenge) async throws(FaceGateError) -> KioskLoginResult {
        try await transport.send("POST", "/v1/kiosk/login", body: .frames(frames, challengeId: challenge.challengeId))
            .decode(KioskLoginResult.self)
    }

    /// `POST /v1/kiosk/sessions`, then opens the session's event stream, which feeds `delegate` until a
    /// terminal event, the session's end, or `close()`.
    public func startKioskFlow(delegate: (any KioskFlowDelegate)?) async throws(FaceGateError) -> KioskSession {
        let created = try await transport.send("POST", "/v1/kiosk/sessions").decode(KioskSessionCreated.self)
        return resumeKioskFlow(interviewId: created.interviewId, interviewToken: created.interviewToken, delegate: delegate)
    }

    /// Attaches to a session that already exists (after an app restart, say); the stream replays from
    /// `lastEventId` when given, else from the start.
    public func resumeKioskFlow(interviewId: String, interviewToken: String, lastEventId: String? = nil,
                                delegate: (any KioskFlowDelegate)?) -> KioskSession {
        let session = KioskSession(transport: transport, interviewId: interviewId, interviewToken: interviewToken, delegate: delegate)
        session.startEventStream(after: lastEventId)
        return session
    }
}

/// One kiosk onboarding session. Step calls return the session after the step; the delegate (and `events`)
/// hear every event of the server's stream exactly once, reconnecting with `Last-Event-ID` when it drops.
public final class KioskSession: Sendable {
    public let interviewId: String
    public let interviewToken: String
    /// The stream's events, for callers that prefer a sequence to the delegate (one consumer).
    public let events: AsyncStream<KioskEvent>

    let transport: Transport
    private let eventsContinuation: AsyncStream<KioskEvent>.Continuation
    private let state: Mutex<State>
    private let finished: Mutex<[CheckedContinuation<Void, Never>]?> = Mutex([])

    private struct State {
        weak var delegate: (any KioskFlowDelegate)?
        var streamTask: Task<Void, Never>?
        var lastEventId: String?
        var delivered: Set<String> = []
        var reconnects = 0
    }

    init(transport: Transport, interviewId: String, interviewToken: String, delegate: (any KioskFlowDelegate)?) {
        self.transport = transport
        self.interviewId = interviewId
        self.interviewToken = interviewToken
        (events, eventsContinuation) = AsyncStream.makeStream(of: KioskEvent.self)
        state = Mutex(State(delegate: delegate))
    }

    public var delegate: (any KioskFlowDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// The id of the last event delivered, for `resumeKioskFlow`.
    public var lastEventId: String? { state.withLock { $0.lastEventId } }
    /// How many times the event stream was reopened.
    public var reconnectCount: Int { state.withLock { $0.reconnects } }

    private var path: String {
        "/v1/kiosk/sessions/" + (interviewId.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? interviewId)
    }
    private var tokenHeader: [String: String] { ["X-Interview-Token": interviewToken] }

    // MARK: steps

    /// `POST …/selfie` with the frames of a liveness challenge.
    public func submitSelfie(frames: [Data], challenge: LivenessChallenge) async throws(FaceGateError) -> KioskStepResult {
        try KioskStepResult.decode(try await transport.send("POST", path + "/selfie", body: .frames(frames, challengeId: challenge.challengeId),
                                                            headers: tokenHeader))
    }

    /// `POST …/id-front` with a photo of the document's front.
    public func submitIdFront(image: Data) async throws(FaceGateError) -> KioskStepResult {
        try KioskStepResult.decode(try await transport.send("POST", path + "/id-front", body: .image(image), headers: tokenHeader))
    }

    /// `POST …/id-back` with a photo of the document's back (the MRZ side).
    public func submitIdBack(image: Data) async throws(FaceGateError) -> KioskStepResult {
        try KioskStepResult.decode(try await transport.send("POST", path + "/id-back", body: .image(image), headers: tokenHeader))
    }

    /// `GET /v1/kiosk/sessions/{interviewId}`.
    public func status() async throws(FaceGateError) -> KioskSessionStatus {
        try await transport.send("GET", path, headers: tokenHeader).decode(KioskSessionStatus.self)
    }

    /// `DELETE /v1/kiosk/sessions/{interviewId}`: the server emits `userCancelledSession`, which the delegate hears.
    public func cancel() async throws(FaceGateError) {
        _ = try await transport.send("DELETE", path, headers: tokenHeader)
    }

    /// Stops listening to the event stream (the session itself goes on on the server).
    public func close() {
        let task = state.withLock { $0.streamTask }
        task?.cancel()
    }

    /// Returns once the event stream has ended for good (terminal event, session over, or `close()`).
    public func waitUntilStreamEnds() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyDone = finished.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters!.append(continuation)
                return false
            }
            if alreadyDone { continuation.resume() }
        }
    }

    // MARK: event stream

    func startEventStream(after lastEventId: String?) {
        state.withLock { $0.lastEventId = lastEventId }
        let task = Task { [self] in
            await runEventStream()
            eventsContinuation.finish()
            let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
                defer { waiters = nil }
                return waiters ?? []
            }
            for waiter in waiters { waiter.resume() }
        }
        state.withLock { $0.streamTask = task }
    }

    /// Keeps the stream open until a terminal event or a terminal session state; gives up after five
    /// consecutive failed opens (telling the delegate through `onKioskError`).
    private func runEventStream() async {
        let configuration = transport.configuration
        var consecutiveFailures = 0
        var delay = configuration.eventStreamReconnectDelay
        var opened = 0
        while !Task.isCancelled {
            if opened > 0 { state.withLock { $0.reconnects += 1 } }
            opened += 1
            var parser = ServerSentEventParser()
            var failure: FaceGateError?
            var sawEvent = false
            do {
                var request = try transport.request("GET", path + "/events", accessToken: nil, headers: tokenHeader)
                try transport.sign(&request, accessToken: nil, body: nil)
                request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
                request.timeoutInterval = configuration.eventStreamIdleTimeout.timeInterval
                if let last = state.withLock({ $0.lastEventId }) { request.setValue(last, forHTTPHeaderField: "Last-Event-ID") }
                let response = StreamingResponse(request: request, idleTimeout: configuration.eventStreamIdleTimeout)
                do {
                    for try await chunk in response.chunks {
                        for message in parser.feed(chunk) {
                            sawEvent = true
                            if await deliver(message) {
                                response.stop()
                                return
                            }
                        }
                    }
                } catch let error as FaceGateError {
                    failure = error
                } catch {
                    failure = .transport(code: 0, message: "\(error)")
                }
                response.stop()
            } catch {
                failure = error
            }
            if Task.isCancelled { return }
            if let retry = parser.retry { delay = .milliseconds(retry) }
            if let failure {
                switch failure {
                case .cancelled:
                    return
                case .unauthorized, .notFound, .forbidden, .accessTokenInvalid, .accessTokenExpired, .sessionExpired, .usage, .invalidRequest:
                    report(failure)
                    return
                default:
                    consecutiveFailures = sawEvent ? 1 : consecutiveFailures + 1
                }
            } else {
                consecutiveFailures = sawEvent ? 0 : consecutiveFailures + 1
            }
            // The stream ended without a terminal event: finished on the server, or just dropped?
            if let status = try? await status(), status.isTerminal {
                if status.state == "expired" {
                    await deliver(ServerSentEvent(id: nil, event: "kioskError",
                                            data: #"{"code":"SESSION_EXPIRED","message":"the kiosk session has expired"}"#))
                }
                return
            }
            if consecutiveFailures >= 5 {
                report(failure ?? .transport(code: 0, message: "the event stream keeps ending without events"))
                return
            }
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    private func report(_ error: FaceGateError) {
        _ = deliver(.kioskError(KioskErrorEvent(code: error.code, message: error.message)), id: nil)
    }

    /// Delivers one stream message unless its id was delivered before; true when it ends the flow.
    @discardableResult
    private func deliver(_ message: ServerSentEvent) async -> Bool {
        var event: KioskEvent
        do {
            event = try KioskEvent(name: message.event, data: Data(message.data.utf8))
        } catch {
            event = .kioskError(KioskErrorEvent(code: error.code, message: error.message))
        }
        // Events carry no identity token: the finished session hands it over once asked.
        if case .kioskFlowCompleted(var completed) = event, completed.success, completed.token == nil {
            completed.token = (try? await status())?.result?.token
            event = .kioskFlowCompleted(completed)
        }
        return deliver(event, id: message.id)
    }

    private func deliver(_ event: KioskEvent, id: String?) -> Bool {
        let fresh = state.withLock { state -> Bool in
            guard let id else { return true }
            guard state.delivered.insert(id).inserted else { return false }
            state.lastEventId = id
            return true
        }
        let terminal: Bool
        switch event {
        case .kioskFlowCompleted, .userCancelledSession: terminal = true
        case .kioskError(let error): terminal = ["SESSION_EXPIRED", "TOO_MANY_ATTEMPTS"].contains(error.code)
        default: terminal = false
        }
        guard fresh else { return terminal }
        eventsContinuation.yield(event)
        guard let delegate else { return terminal }
        switch event {
        case .selfieScanCompleted(let data): delegate.onSelfieScanCompleted(self, data)
        case .idFrontCompleted(let data): delegate.onIdFrontCompleted(self, data)
        case .idBackCompleted(let data): delegate.onIdBackCompleted(self, data)
        case .idProcessed(let data): delegate.onIdProcessed(self, data)
        case .faceMatchCompleted(let data): delegate.onFaceMatchCompleted(self, data)
        case .kioskFlowCompleted(let data): delegate.onKioskFlowCompleted(self, data)
        case .kioskError(let data): delegate.onKioskError(self, data)
        case .userCancelledSession: delegate.userCancelledSession(self)
        case .unknown: break
        }
        return terminal
    }
}
