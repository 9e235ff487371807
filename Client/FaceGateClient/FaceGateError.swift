import Foundation

/// What the server said when it refused a call: the wire code, its message, the audit transaction
/// (when one was recorded), the HTTP status and, for `RATE_LIMITED`, how long to wait.
public struct FaceGateServerError: Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var transactionId: String?
    public var httpStatus: Int
    /// Seconds from `Retry-After`, when the server sent it.
    public var retryAfter: Int?

    public init(code: String, message: String, transactionId: String? = nil, httpStatus: Int, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.transactionId = transactionId
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
    }

    public var description: String {
        var text = "\(code) (HTTP \(httpStatus)): \(message)"
        if let transactionId { text += " [transaction \(transactionId)]" }
        return text
    }
}

/// Every way a FaceGate call can fail: one case per wire code (API.md, the kiosk contract), then the
/// failures that happen on this side of the wire. Server cases keep the server's message and transaction id.
public enum FaceGateError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidRequest(FaceGateServerError)
    case unauthorized(FaceGateServerError)
    case forbidden(FaceGateServerError)
    case notFound(FaceGateServerError)
    case conflict(FaceGateServerError)
    case payloadTooLarge(FaceGateServerError)
    case moduleDisabled(FaceGateServerError)
    case moduleNotFormal(FaceGateServerError)
    case accessTokenInvalid(FaceGateServerError)
    case accessTokenExpired(FaceGateServerError)
    case noFace(FaceGateServerError)
    case noMatchFace(FaceGateServerError)
    case imageFormatError(FaceGateServerError)
    case confirmRequired(FaceGateServerError)
    case employeeNumberMismatch(FaceGateServerError)
    case spoofDetected(FaceGateServerError)
    case ambiguousMatch(FaceGateServerError)
    case lowQuality(FaceGateServerError)
    case duplicateFace(FaceGateServerError)
    case authenticationFailed(FaceGateServerError)
    case credentialLocked(FaceGateServerError)
    case credentialNotEnrolled(FaceGateServerError)
    case rateLimited(FaceGateServerError)
    case serviceUnavailable(FaceGateServerError)
    case timeout(FaceGateServerError)
    case invalidEnvelope(FaceGateServerError)
    case identityTokenInvalid(FaceGateServerError)
    case identityTokenExpired(FaceGateServerError)
    case identityTokenUsed(FaceGateServerError)
    case confirmationInvalid(FaceGateServerError)
    case internalError(FaceGateServerError)
    case documentUnreadable(FaceGateServerError)
    case documentExpired(FaceGateServerError)
    case noPortrait(FaceGateServerError)
    case faceMismatch(FaceGateServerError)
    case sessionExpired(FaceGateServerError)
    case documentInvalid(FaceGateServerError)
    case documentAlreadyRegistered(FaceGateServerError)
    case tooManyAttempts(FaceGateServerError)
    /// A code this version of the library does not know yet.
    case unknownServerCode(FaceGateServerError)

    /// The request never got an answer: connection refused, DNS, TLS, reset (the `URLError` code kept).
    case transport(code: Int, message: String)
    /// No answer within the configured request timeout.
    case timedOut
    /// The calling task was cancelled; the HTTP request was cancelled with it.
    case cancelled
    /// The server answered something this library cannot read (not the contract's JSON).
    case decoding(String)
    /// The server's CTID answer envelope failed its MAC or would not decrypt: it was not opened.
    case answerEnvelopeRejected
    /// The app called the library wrongly (no pending confirmation, no access token and no refresh hook, ...).
    case usage(String)

    /// Builds the case for a wire code.
    public init(server: FaceGateServerError) {
        switch server.code {
        case "INVALID_REQUEST": self = .invalidRequest(server)
        case "UNAUTHORIZED": self = .unauthorized(server)
        case "FORBIDDEN": self = .forbidden(server)
        case "NOT_FOUND": self = .notFound(server)
        case "CONFLICT": self = .conflict(server)
        case "PAYLOAD_TOO_LARGE": self = .payloadTooLarge(server)
        case "MODULE_DISABLED": self = .moduleDisabled(server)
        case "MODULE_NOT_FORMAL": self = .moduleNotFormal(server)
        case "ACCESS_TOKEN_INVALID": self = .accessTokenInvalid(server)
        case "ACCESS_TOKEN_EXPIRED": self = .accessTokenExpired(server)
        case "NO_FACE": self = .noFace(server)
        case "NO_MATCH_FACE": self = .noMatchFace(server)
        case "IMAGE_FORMAT_ERROR": self = .imageFormatError(server)
        case "CONFIRM_REQUIRED": self = .confirmRequired(server)
        case "EMPLOYEE_NUMBER_MISMATCH": self = .employeeNumberMismatch(server)
        case "SPOOF_DETECTED": self = .spoofDetected(server)
        case "AMBIGUOUS_MATCH": self = .ambiguousMatch(server)
        case "LOW_QUALITY": self = .lowQuality(server)
        case "DUPLICATE_FACE": self = .duplicateFace(server)
        case "AUTHENTICATION_FAILED": self = .authenticationFailed(server)
        case "CREDENTIAL_LOCKED": self = .credentialLocked(server)
        case "CREDENTIAL_NOT_ENROLLED": self = .credentialNotEnrolled(server)
        case "RATE_LIMITED": self = .rateLimited(server)
        case "SERVICE_UNAVAILABLE": self = .serviceUnavailable(server)
        case "TIMEOUT": self = .timeout(server)
        case "INVALID_ENVELOPE": self = .invalidEnvelope(server)
        case "IDENTITY_TOKEN_INVALID": self = .identityTokenInvalid(server)
        case "IDENTITY_TOKEN_EXPIRED": self = .identityTokenExpired(server)
        case "IDENTITY_TOKEN_USED": self = .identityTokenUsed(server)
        case "CONFIRMATION_INVALID": self = .confirmationInvalid(server)
        case "INTERNAL": self = .internalError(server)
        case "DOCUMENT_UNREADABLE": self = .documentUnreadable(server)
        case "DOCUMENT_EXPIRED": self = .documentExpired(server)
        case "NO_PORTRAIT": self = .noPortrait(server)
        case "FACE_MISMATCH": self = .faceMismatch(server)
        case "SESSION_EXPIRED": self = .sessionExpired(server)
        case "DOCUMENT_INVALID": self = .documentInvalid(server)
        case "DOCUMENT_ALREADY_REGISTERED": self = .documentAlreadyRegistered(server)
        case "TOO_MANY_ATTEMPTS": self = .tooManyAttempts(server)
        default: self = .unknownServerCode(server)
        }
    }

    /// The server's side of the error; nil for failures on this side of the wire.
    public var server: FaceGateServerError? {
        switch self {
        case .invalidRequest(let s), .unauthorized(let s), .forbidden(let s), .notFound(let s), .conflict(let s),
             .payloadTooLarge(let s), .moduleDisabled(let s), .moduleNotFormal(let s), .accessTokenInvalid(let s),
             .accessTokenExpired(let s), .noFace(let s), .noMatchFace(let s), .imageFormatError(let s), .confirmRequired(let s),
             .employeeNumberMismatch(let s), .spoofDetected(let s), .ambiguousMatch(let s), .lowQuality(let s),
             .duplicateFace(let s), .authenticationFailed(let s), .credentialLocked(let s), .credentialNotEnrolled(let s),
             .rateLimited(let s), .serviceUnavailable(let s), .timeout(let s), .invalidEnvelope(let s),
             .identityTokenInvalid(let s), .identityTokenExpired(let s), .identityTokenUsed(let s),
             .confirmationInvalid(let s), .internalError(let s), .documentUnreadable(let s), .documentExpired(let s),
             .noPortrait(let s), .faceMismatch(let s), .sessionExpired(let s), .documentInvalid(let s), .documentAlreadyRegistered(let s), .tooManyAttempts(let s),
             .unknownServerCode(let s):
            s
        case .transport, .timedOut, .cancelled, .decoding, .answerEnvelopeRejected, .usage:
            nil
        }
    }

    /// The wire code, or a name for a local failure (`TRANSPORT`, `TIMED_OUT`, `CANCELLED`, `DECODING`,
    /// `ANSWER_ENVELOPE_REJECTED`, `USAGE`).
    public var code: String {
        if let server { return server.code }
        switch self {
        case .transport: return "TRANSPORT"
        case .timedOut: return "TIMED_OUT"
        case .cancelled: return "CANCELLED"
        case .decoding: return "DECODING"
        case .answerEnvelopeRejected: return "ANSWER_ENVELOPE_REJECTED"
        default: return "USAGE"
        }
    }

    public var message: String {
        if let server { return server.message }
        switch self {
        case .transport(_, let message): return message
        case .timedOut: return "the server did not answer in time"
        case .cancelled: return "the call was cancelled"
        case .decoding(let what): return what
        case .answerEnvelopeRejected: return "the answer envelope did not verify"
        case .usage(let what): return what
        default: return ""
        }
    }

    public var transactionId: String? { server?.transactionId }

    /// True when the request never reached a verdict (transport, timeout) or the server asks to come back later.
    public var isTransportFailure: Bool {
        switch self {
        case .transport, .timedOut: true
        default: false
        }
    }

    /// Trying the same call again later may succeed.
    public var isRetriable: Bool {
        switch self {
        case .transport, .timedOut, .rateLimited, .serviceUnavailable, .timeout: true
        default: false
        }
    }

    /// Safe to log: codes and server messages only, never tokens, images or keys.
    public var description: String {
        if let server { return server.description }
        return "\(code): \(message)"
    }
}
