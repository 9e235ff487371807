import Foundation
import Synchronization

/// What a `FaceLogin` reports when driven through its delegate. Called on an arbitrary thread: hop to
/// the main actor yourself before touching UI.
public protocol FaceLoginDelegate: AnyObject, Sendable {
    /// Logged in: hand `identity.identityToken` to the app server.
    func faceLogin(_ faceLogin: FaceLogin, didSucceed identity: FaceGateIdentity)
    /// The face matched on a device not yet bound: ask for the employee number, then `confirm(employeeNumber:)`.
    func faceLoginNeedsConfirmation(_ faceLogin: FaceLogin, confirmation: FaceLoginConfirmation)
    /// The server gave an event code (`NO_FACE`, `NO_MATCH_FACE`, `IMAGE_FORMAT_ERROR`, `MODULE_DISABLED`,
    /// `MODULE_NOT_FORMAL`, `RATE_LIMITED`, an access token still refused after one refresh, ...): `error.code`.
    func faceLogin(_ faceLogin: FaceLogin, didFail error: FaceGateError)
    /// The call got no answer (connection, timeout) or the answer could not be read.
    func faceLogin(_ faceLogin: FaceLogin, didFailWithTransportError error: FaceGateError)
}

extension FaceLoginDelegate {
    public func faceLogin(_ faceLogin: FaceLogin, didFailWithTransportError error: FaceGateError) {
        self.faceLogin(faceLogin, didFail: error)
    }
}

/// A call started through the delegate API; `cancel()` stops its HTTP request (no delegate callback follows).
public struct FaceGateCall: Sendable {
    let task: Task<Void, Never>
    public func cancel() { task.cancel() }
    /// Waits until the delegate has been told the outcome (or the call was cancelled).
    public func finish() async { await task.value }
}

/// Face login, as the mobile SDKs shape it: send a face, get an identity token or a confirmation step.
///
/// Async methods return the outcome and throw `FaceGateError`; the delegate methods of the same name (callable
/// from synchronous code) run them in a task and report through `delegate`.
public final class FaceLogin: Sendable {
    let transport: Transport
    private let state: Mutex<State>

    private struct State {
        weak var delegate: (any FaceLoginDelegate)?
        var pending: FaceLoginConfirmation?
    }

    public init(configuration: FaceGateConfiguration, delegate: (any FaceLoginDelegate)? = nil) {
        transport = Transport(configuration: configuration)
        state = Mutex(State(delegate: delegate, pending: nil))
    }

    /// Held weakly.
    public var delegate: (any FaceLoginDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    public func setAccessToken(_ token: String) { transport.setAccessToken(token) }

    /// The confirmation the last login asked for, until it is confirmed or another login starts.
    public var pendingConfirmation: FaceLoginConfirmation? { state.withLock { $0.pending } }

    // MARK: async

    /// `POST /v1/face-login` with one photo (JPEG or PNG).
    public func validate(image: Data) async throws(FaceGateError) -> FaceLoginOutcome {
        try await login(body: .image(image))
    }

    /// `POST /v1/face-login` with a liveness burst, for apps whose policy is `liveness.faceLogin = active`.
    public func validate(frames: [Data], challenge: LivenessChallenge) async throws(FaceGateError) -> FaceLoginOutcome {
        try await login(body: .frames(frames, challengeId: challenge.challengeId))
    }

    /// `POST /v1/face-login/confirm` for the pending confirmation. `bindingTicket`: on apps whose binding policy
    /// asks for one, the ticket the app server (or one of the person's bound devices) got for this user.
    public func confirm(employeeNumber: String, bindingTicket: String? = nil) async throws(FaceGateError) -> FaceGateIdentity {
        guard let pending = pendingConfirmation else { throw .usage("no login is waiting for confirmation") }
        struct Body: Encodable { var confirmationId: String; var employeeNumber: String; var bindingTicket: String? }
        let answer = try await transport.send("POST", "/v1/face-login/confirm",
                                              body: .json(Body(confirmationId: pending.confirmationId, employeeNumber: employeeNumber,
                                                               bindingTicket: bindingTicket)))
        let identity = try answer.decode(FaceGateIdentity.self)
        state.withLock { if $0.pending == pending { $0.pending = nil } }
        return identity
    }

    private func login(body: RequestBody) async throws(FaceGateError) -> FaceLoginOutcome {
        state.withLock { $0.pending = nil }
        let outcome = try await transport.send("POST", "/v1/face-login", body: body).decode(FaceLoginOutcome.self)
        if case .confirmationRequired(let confirmation) = outcome { state.withLock { $0.pending = confirmation } }
        return outcome
    }

    // MARK: delegate

    /// Runs `validate(image:)` and tells the delegate.
    @discardableResult
    public func validate(image: Data) -> FaceGateCall {
        report { login throws(FaceGateError) in try await login.validate(image: image) }
    }

    /// Runs `validate(frames:challenge:)` and tells the delegate.
    @discardableResult
    public func validate(frames: [Data], challenge: LivenessChallenge) -> FaceGateCall {
        report { login throws(FaceGateError) in try await login.validate(frames: frames, challenge: challenge) }
    }

    /// Runs `confirm(employeeNumber:bindingTicket:)` and tells the delegate.
    @discardableResult
    public func confirm(employeeNumber: String, bindingTicket: String? = nil) -> FaceGateCall {
        report { login throws(FaceGateError) in .success(try await login.confirm(employeeNumber: employeeNumber, bindingTicket: bindingTicket)) }
    }

    private func report(_ call: @escaping @Sendable (FaceLogin) async throws(FaceGateError) -> FaceLoginOutcome) -> FaceGateCall {
        FaceGateCall(task: Task { [self] in
            let result: Result<FaceLoginOutcome, FaceGateError>
            do throws(FaceGateError) { result = .success(try await call(self)) } catch { result = .failure(error) }
            guard let delegate = self.delegate else { return }
            switch result {
            case .success(.success(let identity)):
                delegate.faceLogin(self, didSucceed: identity)
            case .success(.confirmationRequired(let confirmation)):
                delegate.faceLoginNeedsConfirmation(self, confirmation: confirmation)
            case .failure(.cancelled):
                return
            case .failure(let error) where error.isTransportFailure:
                delegate.faceLogin(self, didFailWithTransportError: error)
            case .failure(.decoding(let what)):
                delegate.faceLogin(self, didFailWithTransportError: .decoding(what))
            case .failure(let error):
                delegate.faceLogin(self, didFail: error)
            }
        })
    }
}
