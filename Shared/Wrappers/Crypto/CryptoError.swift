internal import COpenSSL

/// A failed cryptographic operation.
///
/// `description` names the operation and OpenSSL's library and reason strings only: it never
/// contains keys, plaintext, nonces or tags, so it is safe to log.
public struct CryptoError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What was attempted, e.g. `"AES-256-GCM open"`.
    public var operation: String
    /// The first code on OpenSSL's per-thread error queue right after the failing call; 0 when the
    /// failure was detected by this module or OpenSSL queued nothing (a GCM tag mismatch, for one).
    public var openSSLCode: UInt
    /// True when the input was refused because it is not authentic (an AEAD tag mismatch).
    public var isAuthenticationFailure: Bool
    /// Repeating the operation with the same input gives the same answer.
    public var isRetriable: Bool { false }
    /// Why the input was refused before it reached OpenSSL, when it was.
    var reason: String?
    var sourceLocation: String

    public var description: String {
        var text = "\(operation) failed"
        if let reason { text += ": \(reason)" }
        if isAuthenticationFailure { text += ": authentication failed" }
        if openSSLCode != 0 {
            let library = ERR_lib_error_string(openSSLCode).map { String(cString: $0) } ?? "unknown library"
            let why = ERR_reason_error_string(openSSLCode).map { String(cString: $0) } ?? "unknown reason"
            text += " (OpenSSL 0x\(String(openSSLCode, radix: 16)): \(library): \(why))"
        }
        return text
    }

    public var debugDescription: String { "\(description) at \(sourceLocation)" }

    /// The error OpenSSL just queued for `operation`; drains the rest of this thread's queue so a
    /// later caller (libpq's TLS, say) never reads a stale entry.
    static func openSSL(_ operation: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        let code = ERR_get_error()
        ERR_clear_error()
        return CryptoError(operation: operation, openSSLCode: code, isAuthenticationFailure: false,
                           reason: nil, sourceLocation: "\(fileID):\(line)")
    }

    /// Input refused by this module before OpenSSL saw it (wrong key length and the like).
    static func invalidInput(_ operation: String, _ reason: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        ERR_clear_error()  // a probe that led to the refusal may have queued something
        return CryptoError(operation: operation, openSSLCode: 0, isAuthenticationFailure: false,
                    reason: reason, sourceLocation: "\(fileID):\(line)")
    }

    static func authenticationFailure(_ operation: String, fileID: String = #fileID, line: Int = #line) -> CryptoError {
        ERR_clear_error()
        return CryptoError(operation: operation, openSSLCode: 0, isAuthenticationFailure: true,
                           reason: nil, sourceLocation: "\(fileID):\(line)")
    }
}
