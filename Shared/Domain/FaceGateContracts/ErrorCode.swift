/// Every outcome code FaceGate puts on the wire, with the HTTP status it travels with.
/// The first seven are the face-login SDK's event codes; the rest extend them.
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    case invalidRequest = "INVALID_REQUEST"
    case unauthorized = "UNAUTHORIZED"
    case forbidden = "FORBIDDEN"
    case notFound = "NOT_FOUND"
    case conflict = "CONFLICT"
    case payloadTooLarge = "PAYLOAD_TOO_LARGE"
    case moduleDisabled = "MODULE_DISABLED"
    case moduleNotFormal = "MODULE_NOT_FORMAL"
    case accessTokenInvalid = "ACCESS_TOKEN_INVALID"
    case accessTokenExpired = "ACCESS_TOKEN_EXPIRED"
    case noFace = "NO_FACE"
    case noMatchFace = "NO_MATCH_FACE"
    case imageFormatError = "IMAGE_FORMAT_ERROR"
    case confirmRequired = "CONFIRM_REQUIRED"
    case employeeNumberMismatch = "EMPLOYEE_NUMBER_MISMATCH"
    case spoofDetected = "SPOOF_DETECTED"
    case ambiguousMatch = "AMBIGUOUS_MATCH"
    case lowQuality = "LOW_QUALITY"
    case duplicateFace = "DUPLICATE_FACE"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case credentialLocked = "CREDENTIAL_LOCKED"
    case credentialNotEnrolled = "CREDENTIAL_NOT_ENROLLED"
    case rateLimited = "RATE_LIMITED"
    case serviceUnavailable = "SERVICE_UNAVAILABLE"
    case timeout = "TIMEOUT"
    case invalidEnvelope = "INVALID_ENVELOPE"
    case identityTokenInvalid = "IDENTITY_TOKEN_INVALID"
    case identityTokenExpired = "IDENTITY_TOKEN_EXPIRED"
    case identityTokenUsed = "IDENTITY_TOKEN_USED"
    case confirmationInvalid = "CONFIRMATION_INVALID"
    case documentUnreadable = "DOCUMENT_UNREADABLE"
    case documentExpired = "DOCUMENT_EXPIRED"
    case documentInvalid = "DOCUMENT_INVALID"
    case documentRegistered = "DOCUMENT_ALREADY_REGISTERED"
    case noPortrait = "NO_PORTRAIT"
    case faceMismatch = "FACE_MISMATCH"
    case sessionExpired = "SESSION_EXPIRED"
    case tooManyAttempts = "TOO_MANY_ATTEMPTS"
    case approvalDenied = "APPROVAL_DENIED"
    /// A missing, malformed, replayed or mismatched DPoP proof (RFC 9449 `invalid_dpop_proof`).
    case dpopProofInvalid = "DPOP_PROOF_INVALID"
    /// The app binds new device keys only with a ticket (from the app server or a bound device), and
    /// none valid for the claimed user came with the confirmation.
    case bindingTicketInvalid = "BINDING_TICKET_INVALID"
    /// A kiosk route called without a proof by a registered, unrevoked kiosk key of the app (or from an address the kiosk
    /// is not pinned to).
    case kioskNotRegistered = "KIOSK_NOT_REGISTERED"
    /// The user already holds the most face templates a user may hold; delete one first.
    case faceLimitReached = "FACE_LIMIT_REACHED"
    /// An `Idempotency-Key` whose first request has not been answered yet.
    case idempotencyInProgress = "IDEMPOTENCY_IN_PROGRESS"
    case internalError = "INTERNAL"

    public var httpStatus: Int {
        switch self {
        case .invalidRequest, .invalidEnvelope: 400
        case .unauthorized, .accessTokenInvalid, .accessTokenExpired, .identityTokenInvalid, .identityTokenExpired, .dpopProofInvalid: 401
        case .forbidden, .moduleDisabled, .moduleNotFormal, .bindingTicketInvalid, .kioskNotRegistered: 403
        case .notFound, .credentialNotEnrolled: 404
        case .conflict, .identityTokenUsed, .confirmationInvalid, .faceLimitReached, .idempotencyInProgress: 409
        case .payloadTooLarge: 413
        case .noFace, .noMatchFace, .imageFormatError, .ambiguousMatch, .lowQuality, .duplicateFace,
             .spoofDetected, .employeeNumberMismatch, .authenticationFailed, .confirmRequired,
             .documentUnreadable, .documentExpired, .documentInvalid, .documentRegistered, .noPortrait, .faceMismatch, .tooManyAttempts, .approvalDenied: 422
        case .sessionExpired: 410
        case .credentialLocked: 423
        case .rateLimited: 429
        case .serviceUnavailable, .timeout: 503
        case .internalError: 500
        }
    }
}
