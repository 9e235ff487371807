import Foundation

/// An error a handler throws to answer with a specific status and the project's error envelope:
/// `{"error":{"code":"...","message":"...","transactionId":"..."}}`.
/// `message` is sent to the client, so it must not carry secrets or internal detail.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    public var transactionId: String?
    public var headers: [(String, String)]
    /// More fields of the error body, beside code, message and transaction id.
    public var details: [String: HTTPErrorDetail]

    public init(status: Int, code: String, message: String, transactionId: String? = nil, headers: [(String, String)] = [],
                details: [String: HTTPErrorDetail] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.transactionId = transactionId
        self.headers = headers
        self.details = details
    }

    /// Whether the same request may succeed later unchanged.
    public var isRetriable: Bool { status == 429 || status == 502 || status == 503 || status == 504 }

    public var description: String { "HTTP \(status) \(code): \(message)" }

    /// The response that carries this error to the client.
    public var response: HTTPResponse {
        let envelope = ErrorEnvelope(error: .init(code: code, message: message, transactionId: transactionId, details: details))
        return HTTPResponse.json(envelope, status: status, headers: headers)
    }

    public static func badRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "INVALID_REQUEST", message: message)
    }
    public static func unauthorized(_ message: String = "Authentication required", code: String = "UNAUTHORIZED") -> HTTPError {
        HTTPError(status: 401, code: code, message: message)
    }
    public static func forbidden(_ message: String = "Not allowed", code: String = "FORBIDDEN") -> HTTPError {
        HTTPError(status: 403, code: code, message: message)
    }
    public static func notFound(_ message: String = "No such resource") -> HTTPError {
        HTTPError(status: 404, code: "NOT_FOUND", message: message)
    }
    public static func methodNotAllowed(allowed: [String]) -> HTTPError {
        HTTPError(status: 405, code: "METHOD_NOT_ALLOWED", message: "Method not allowed; use \(allowed.joined(separator: ", "))",
                  headers: [("Allow", allowed.joined(separator: ", "))])
    }
    public static func conflict(_ message: String) -> HTTPError {
        HTTPError(status: 409, code: "CONFLICT", message: message)
    }
    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(status: 413, code: "PAYLOAD_TOO_LARGE", message: "Request body exceeds \(limit) bytes")
    }
    public static func unsupportedMediaType(_ message: String) -> HTTPError {
        HTTPError(status: 415, code: "UNSUPPORTED_MEDIA_TYPE", message: message)
    }
    /// 422 with a domain code such as `NO_FACE` or `IMAGE_FORMAT_ERROR`.
    public static func unprocessable(code: String, message: String, transactionId: String? = nil) -> HTTPError {
        HTTPError(status: 422, code: code, message: message, transactionId: transactionId)
    }
    public static func locked(_ message: String, code: String = "CREDENTIAL_LOCKED") -> HTTPError {
        HTTPError(status: 423, code: code, message: message)
    }
    public static func tooManyRequests(retryAfterSeconds: Int, message: String = "Too many requests") -> HTTPError {
        HTTPError(status: 429, code: "RATE_LIMITED", message: message, headers: [("Retry-After", String(retryAfterSeconds))])
    }
    public static func serviceUnavailable(_ message: String = "Service unavailable", retryAfterSeconds: Int? = nil) -> HTTPError {
        HTTPError(status: 503, code: "SERVICE_UNAVAILABLE", message: message,
                  headers: retryAfterSeconds.map { [("Retry-After", String($0))] } ?? [])
    }
    /// What clients see for any failure the handler did not describe; details stay in the server.
    public static let internalError = HTTPError(status: 500, code: "INTERNAL", message: "Internal server error")
}

/// A field of an error body beyond its code and message.
public enum HTTPErrorDetail: Sendable, Equatable {
    case string(String)
    /// A list of small objects of whole numbers, e.g. boxes.
    case objects([[String: Int]])
}

struct ErrorEnvelope: Encodable {
    struct Body: Encodable {
        var code: String
        var message: String
        var transactionId: String?
        var details: [String: HTTPErrorDetail]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ name: String) { stringValue = name }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(code, forKey: Key("code"))
            try container.encode(message, forKey: Key("message"))
            try container.encodeIfPresent(transactionId, forKey: Key("transactionId"))
            for (name, detail) in details.sorted(by: { $0.key < $1.key }) where !["code", "message", "transactionId"].contains(name) {
                switch detail {
                case .string(let text): try container.encode(text, forKey: Key(name))
                case .objects(let objects): try container.encode(objects, forKey: Key(name))
                }
            }
        }
    }
    var error: Body
}

/// Why the server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case invalidConfiguration
        case addressResolutionFailed
        /// The port is taken or the address is not local (`errno` says which).
        case bindFailed
        case daemonStartFailed
        case alreadyStarted
    }

    public var kind: Kind
    /// The `errno` of the failing system call, 0 when none applies.
    public var code: Int32
    public var message: String

    init(_ kind: Kind, code: Int32 = 0, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    /// A port held by a process that is shutting down frees up; a bad configuration does not.
    public var isRetriable: Bool { kind == .bindFailed && code == EADDRINUSE }

    public var description: String {
        code == 0 ? "HTTP server: \(message)" : "HTTP server: \(message) (errno \(code): \(String(cString: strerror(code))))"
    }
}
