import Foundation

/// One request as a handler sees it: the whole body is already read (and within the route's cap).
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path as sent, still percent-encoded, without the query.
    public var path: String
    /// Query arguments, percent-decoded (`+` is a space); the first of repeated names wins.
    public var query: [String: String]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Values of the `{name}` segments of the matched route, percent-decoded.
    public var pathParameters: [String: String]
    /// Peer IP address as text (no port).
    public var remoteAddress: String
    /// `X-Request-Id` when the client sent a sane one (1–128 visible ASCII characters), otherwise a new UUID.
    /// Every response carries it back.
    public var requestId: String
    /// The pattern that matched, e.g. `/v1/apps/{appId}/users`; use it, never `path`, as a metrics label.
    public var routeTemplate: String
    /// What the route's admission learned from the headers (the caller it authenticated), handed to the handler so
    /// that nothing is proven twice; nil when no admission ran (a bodiless request, a route without one).
    public var admitted: (any Sendable)?

    public init(
        method: String, path: String, query: [String: String] = [:], headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [], pathParameters: [String: String] = [:], remoteAddress: String = "127.0.0.1",
        requestId: String = UUID().uuidString.lowercased(), routeTemplate: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.remoteAddress = remoteAddress
        self.requestId = requestId
        self.routeTemplate = routeTemplate ?? path
    }

    /// Decodes the body as JSON (ISO-8601 dates). Failures become 400 `INVALID_REQUEST` whose message
    /// names the offending field, e.g. `Field 'modules.faceLogin' must be a string`.
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws(HTTPError) -> T {
        guard !body.isEmpty else {
            throw .badRequest("Request body is empty; expected a JSON document")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw .badRequest(Self.describe(error))
        } catch {
            throw .badRequest("Request body is not valid JSON")
        }
    }

    /// The parts of a `multipart/form-data` body (boundary taken from `Content-Type`).
    /// 415 when the body is not multipart, 400 when it is malformed or truncated.
    public func multipartParts() throws(HTTPError) -> [MultipartPart] {
        guard let contentType = headers["Content-Type"],
              let mediaType = MediaType(parsing: contentType),
              mediaType.type == "multipart/form-data"
        else {
            throw .unsupportedMediaType("Expected a multipart/form-data body")
        }
        guard let boundary = mediaType.parameters["boundary"], !boundary.isEmpty else {
            throw .badRequest("multipart/form-data without a boundary parameter")
        }
        return try MultipartParser.parse(body: body, boundary: boundary)
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], appending key: (any CodingKey)? = nil) -> String {
            var text = ""
            for component in codingPath + (key.map { [$0] } ?? []) {
                if let index = component.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? component.stringValue : "." + component.stringValue
                }
            }
            return text
        }
        func typeName(_ type: Any.Type) -> String {
            switch type {
            case is String.Type: "a string"
            case is Bool.Type: "a boolean"
            case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type: "an integer"
            case is Double.Type, is Float.Type: "a number"
            case is [Any].Type: "an array"
            case is [String: Any].Type: "an object"
            default: "\(type)"
            }
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "Missing field '\(path(context.codingPath, appending: key))'"
        case .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            return field.isEmpty ? "Expected \(typeName(type)), found null" : "Field '\(field)' must be \(typeName(type)), found null"
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            return field.isEmpty ? "Expected \(typeName(type)) at the top level" : "Field '\(field)' must be \(typeName(type))"
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty {
                return "Request body is not valid JSON"
            }
            return "Field '\(field)' is invalid: \(context.debugDescription)"
        @unknown default:
            return "Request body does not have the expected shape"
        }
    }
}

/// One part of a `multipart/form-data` body.
public struct MultipartPart: Sendable {
    /// The `name` of the form field.
    public var name: String
    public var filename: String?
    public var contentType: String?
    public var body: [UInt8]

    public init(name: String, filename: String? = nil, contentType: String? = nil, body: [UInt8]) {
        self.name = name
        self.filename = filename
        self.contentType = contentType
        self.body = body
    }

    /// The body as UTF-8 text (for plain form fields).
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A response body: bytes sent with `Content-Length`, or a stream sent chunked as it is produced.
/// A stream ends the response when it finishes; it is cancelled when the client goes away.
/// For large exports build it with `AsyncStream(unfolding:)` so the next chunk is produced only when
/// the client has taken the previous ones.
public enum HTTPBody: Sendable {
    case bytes([UInt8])
    case stream(AsyncStream<[UInt8]>)
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: HTTPBody

    public init(status: Int, headers: [(String, String)] = [], body: HTTPBody = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// JSON with `Content-Type: application/json` (unless `headers` name another), ISO-8601 dates and unescaped slashes.
    public static func json<T: Encodable>(_ value: T, status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return HTTPError.internalError.response
        }
        let hasContentType = headers.contains { asciiCaseInsensitiveEquals($0.0, "Content-Type") }
        return HTTPResponse(status: status, headers: (hasContentType ? [] : [("Content-Type", "application/json")]) + headers,
                            body: .bytes(Array(data)))
    }

    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }

    public static let noContent = HTTPResponse(status: 204)

    /// The first value of a header (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { asciiCaseInsensitiveEquals($0.0, name) }?.1
    }
}

public typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Decides, from the request line and headers alone, whether a request's body is worth reading. The request it sees
/// has no body.
public typealias HTTPAdmission = @Sendable (HTTPRequest) async -> HTTPAdmissionVerdict

public enum HTTPAdmissionVerdict: Sendable {
    /// Read the body and run the handler, whose request carries `what` as `admitted`.
    case admit(_ what: (any Sendable)? = nil)
    /// Send this answer (a 401, say) at once; the body is never read.
    case refuse(HTTPResponse)
}

/// What the server reports once per finished request (after the last byte was sent or the client left).
public struct HTTPRequestRecord: Sendable {
    public var method: String
    /// The matched pattern; `"unmatched"` for 404s so raw paths never become labels.
    public var routeTemplate: String
    /// The status sent; 499 when the client left before a response was queued.
    public var status: Int
    public var duration: Duration
    public var requestId: String
    public var remoteAddress: String
    /// The answer's `traceresponse` header (W3C Trace Context level 2), when the handler set one: the request line
    /// names the trace the call's other lines belong to.
    public var traceResponse: String?

    public init(method: String, routeTemplate: String, status: Int, duration: Duration, requestId: String, remoteAddress: String,
                traceResponse: String? = nil) {
        self.method = method
        self.routeTemplate = routeTemplate
        self.status = status
        self.duration = duration
        self.requestId = requestId
        self.remoteAddress = remoteAddress
        self.traceResponse = traceResponse
    }
}
