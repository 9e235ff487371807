import FaceGateContracts
import Foundation

/// A refusal with its wire code, from any layer that decides one (a use case, a store spending a ticket); the gateway
/// turns it into the `{"error": {...}}` envelope.
package struct APIError: Error {
    package var code: ErrorCode
    package var message: String
    package var retryAfter: Int?
    /// Fields beside code and message in the error body (a refused photo's `reason` and `faces`).
    package var details: [String: Detail] = [:]

    package enum Detail: Sendable, Equatable {
        case string(String)
        /// A list of small objects of whole numbers, e.g. boxes.
        case objects([[String: Int]])
    }

    package init(_ code: ErrorCode, _ message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }
}

extension Encodable {
    /// The value as JSON text, for a `jsonb` parameter.
    package var jsonText: String { String(decoding: (try? FaceGateJSON.encode(self)) ?? Array("{}".utf8), as: UTF8.self) }
}
