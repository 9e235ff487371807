import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import ServiceKit
import Synchronization

extension APIError {
    func http(transactionId: UUID?) -> HTTPError {
        var headers: [(String, String)] = []
        if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
        if code == .unauthorized || code == .accessTokenInvalid || code == .accessTokenExpired {
            headers.append(("WWW-Authenticate", "Bearer"))
        } else if code == .dpopProofInvalid {
            headers.append(("WWW-Authenticate", #"DPoP algs="ES256", error="invalid_dpop_proof""#))
        }
        return HTTPError(status: code.httpStatus, code: code.rawValue, message: message,
                         transactionId: transactionId?.uuidString.lowercased(), headers: headers,
                         details: details.mapValues { switch $0 { case .string(let text): .string(text); case .objects(let objects): .objects(objects) } })
    }
}

extension APIError {
    /// The wire error of a matcher outcome other than the one the call needs.
    init(refusing result: FaceJobResult) {
        let code = result.outcome.errorCode ?? .internalError
        self.init(code, result.message ?? Self.defaultMessage(code))
        if let reason = result.reason { details["reason"] = .string(reason) }
        if let faces = result.faces {
            details["faces"] = .objects(faces.map { ["x": $0.x, "y": $0.y, "width": $0.width, "height": $0.height] })
        }
    }

    /// What a matcher's refusal says when the matcher gave no message.
    static func defaultMessage(_ code: ErrorCode) -> String {
        switch code {
        case .noFace: "no face was found in the image"
        case .noMatchFace: "the face does not match anyone enrolled"
        case .ambiguousMatch: "the face matches more than one person too closely"
        case .imageFormatError: "the image could not be decoded"
        case .lowQuality: "the face is too small, blurred or dark"
        case .duplicateFace: "the face is already enrolled for another user"
        case .spoofDetected: "the liveness check failed"
        default: code.rawValue
        }
    }
}

/// Who the current request's caller proved to be, once authenticated: its audit rows' `actor`. Set by the `require…`
/// checks in the request's scope (`APIRoutes`), read when the row is written.
final class RequestCaller: Sendable {
    @TaskLocal static var current: RequestCaller?
    private let actor = Mutex<String?>(nil)
    private let app = Mutex<UUID?>(nil)

    static func note(_ actor: String) { current?.actor.withLock { $0 = actor } }

    static var actor: String? { current?.actor.withLock { $0 } }

    /// Notes the app a credential names, once it is known to exist (an app server's app id, a genuine access token's app),
    /// before the credential is accepted: a refusal from then on is on that app's chain, where its auditors read it.
    static func concerns(_ appId: UUID) { current?.app.withLock { $0 = appId } }

    var concernedApp: UUID? { app.withLock { $0 } }
}

/// The transaction an API call writes, filled in as the call proceeds.
struct TransactionDraft {
    let id = UUID()
    var appId: UUID
    var kind: String
    var outcome = "SUCCESS"
    var userId: UUID?
    var deviceId: String?
    var score: Float?
    var detail: [String: String] = [:]
}

/// Random secrets and keys: URL-safe text with a recognisable prefix, 256 bits of entropy.
func newSecret(prefix: String) -> String {
    prefix + Base64URL.encode(SecureRandom.bytes(32))
}
