import Crypto
import FaceGateCore
import Foundation

/// The `interviewToken` of a kiosk session: HMAC-SHA256 of the session id under a key derived from the
/// gateway's signing seed, base64url. Every gateway instance recomputes it, so the token of the session
/// that approved a customer can be handed out again at kiosk login without storing it; the database keeps
/// only its hash. A new signing key invalidates the tokens of open sessions.
struct InterviewTokens: Sendable {
    private let key: [UInt8]

    init(signingSeed: [UInt8]) throws {
        key = try HKDF.sha256(ikm: signingSeed, salt: [], info: Array("facegate kiosk interview token v1".utf8), length: 32)
    }

    func token(for interviewId: UUID) -> String {
        Base64URL.encode(HMACSHA256.authenticationCode(key: key, data: Array(interviewId.wire.utf8)))
    }

    func isValid(_ token: String, for interviewId: UUID) -> Bool {
        guard let tag = Base64URL.decode(token) else { return false }
        return HMACSHA256.isValid(tag, key: key, data: Array(interviewId.wire.utf8))
    }
}
