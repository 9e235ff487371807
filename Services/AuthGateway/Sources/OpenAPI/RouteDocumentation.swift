import FaceGateCore
import Foundation

/// The document's tags: one per kind of caller and capability.
enum APITag: String, CaseIterable, Sendable {
    case apps, users, faces
    case faceLogin = "face-login"
    case identity
    case deviceCredentials = "device-credentials"
    case deviceBindings = "device-bindings"
    case liveness, ctid, kiosk, audit, keys, discovery, console

    var description: String {
        switch self {
        case .apps: "Apps: modules, thresholds, liveness and device-binding policy, secrets (operator)"
        case .users: "Users of an app (operator)"
        case .faces: "Face templates: enrollment, listing, deletion, 1:N search (operator or app server)"
        case .faceLogin: "Face login, new-device confirmation and 1:1 verification (client app)"
        case .identity: "Access tokens and identity-token exchange (app server)"
        case .deviceCredentials: "Device biometric keys (module deviceAuth)"
        case .deviceBindings: "Tickets binding a new device key to a user"
        case .liveness: "Active-liveness challenges"
        case .ctid: "CTID identity verification"
        case .kiosk: "Kiosk login and onboarding sessions"
        case .audit: "Transaction log search, export and verification (auditor)"
        case .keys: "Operator and auditor keys (operator key covering every app)"
        case .discovery: "Public documents"
        case .console: "The web console's static files"
        }
    }
}

/// The security schemes of `components/securitySchemes` (`OpenAPIComponents.securitySchemes`).
enum SecurityScheme: String, Sendable {
    case operatorKey, auditorKey, appServer, accessToken, deviceProof, interviewToken
}

/// How a route group's callers prove themselves, as the document says it: the alternatives of security schemes, the
/// header parameters they send, and the refusals the proof can answer.
struct CallerDocumentation: Sendable {
    /// Alternatives, each a set of schemes proven together; empty for a public route.
    var security: [[SecurityScheme]]
    /// Header parameters of `components/parameters`, by name.
    var headers: [String] = []
    var errors: [ErrorCode]
    /// A refusal's cause, where its code alone does not say it.
    var because: [ErrorCode: String] = [:]

    /// Anyone may call.
    static let `public` = CallerDocumentation(security: [], errors: [])
}

/// What a request's body is.
enum RequestBody: @unchecked Sendable {
    case none
    /// JSON of `type`; an absent body is allowed when not `required`.
    case json(any DocumentedSchema.Type, required: Bool = true)
    /// A photo: image/jpeg or image/png as the whole body, or multipart/form-data whose fields `form` describes.
    /// The route takes bodies over 64 KB, its caller proven from the headers before the body is read.
    case upload(form: any DocumentedSchema.Type)
    /// JSON of `type` that may be over 64 KB (a sealed envelope, a record with a portrait), taken as an upload is.
    case document(any DocumentedSchema.Type)

    /// Whether the body may be over 64 KB, its caller then proven from the headers before the body is read.
    var isUpload: Bool {
        switch self {
        case .upload, .document: true
        case .none, .json: false
        }
    }
}

/// A query or header parameter a route reads, besides those of its caller's proof.
struct Parameter: Sendable {
    enum Location: String, Sendable { case query, header }
    let name: String
    var location = Location.query
    let schema: DocumentValue
    var description: String?
    var required = false
    /// The shared parameter of `components/parameters` this is, if any.
    var component: String?

    /// `nextCursor` of the previous page.
    static let cursor = Parameter(name: "cursor", schema: ["type": "string"], component: "cursor")
    /// `X-Device-Id`, the device's label.
    static let deviceId = Parameter(name: "X-Device-Id", location: .header, schema: ["type": "string"], component: "deviceId")
}

/// One answer a route gives on success.
struct Answer: @unchecked Sendable {
    let status: Int
    let description: String
    /// The JSON body's type; nil for no body or for `content`.
    let type: (any DocumentedSchema.Type)?
    /// Bodies that are not JSON of a type: media type → schema.
    var media: [(String, DocumentValue)] = []

    static func ok<T: DocumentedSchema & Encodable>(_ type: T.Type, _ description: String) -> Answer {
        Answer(status: 200, description: description, type: type)
    }

    static func created<T: DocumentedSchema & Encodable>(_ type: T.Type, _ description: String) -> Answer {
        Answer(status: 201, description: description, type: type)
    }

    static func noContent(_ description: String) -> Answer { Answer(status: 204, description: description, type: nil) }

    /// A body that is not JSON of a contract type (CSV, an event stream, a file), or none, by media type.
    static func content(_ description: String, _ media: [(String, DocumentValue)], status: Int = 200) -> Answer {
        Answer(status: status, description: description, type: nil, media: media)
    }
}

/// What a route declared: its operation, what it takes, what it answers and refuses, and its doors.
struct RouteDocumentation: @unchecked Sendable {
    let operationId: String
    let summary: String
    let tag: APITag
    let caller: CallerDocumentation
    let body: RequestBody
    let parameters: [Parameter]
    let answers: [Answer]
    /// The refusals of the route itself, beside those of its caller's proof and those every route of its kind has.
    let errors: [ErrorCode]
    /// A refusal's cause, where its code alone does not say it.
    let because: [ErrorCode: String]
    let idempotent: Bool

    /// Every code the route may refuse with, in the order the document lists them: its caller's proof's, its own, and
    /// those every route of its kind has (a body can be malformed or too large, a creating POST can meet its
    /// Idempotency-Key again, a route behind a credential reads PostgreSQL, which can be away).
    var refusals: [ErrorCode] {
        var codes: [ErrorCode] = []
        func add(_ more: [ErrorCode]) { for code in more where !codes.contains(code) { codes.append(code) } }
        if case .none = body, parameters.isEmpty {} else { add([.invalidRequest]) }
        add(caller.errors)
        add(errors)
        if case .none = body {} else { add([.payloadTooLarge]) }
        if idempotent { add([.conflict, .idempotencyInProgress]) }
        if !caller.security.isEmpty { add([.serviceUnavailable]) }
        return codes
    }

    /// What any route may answer besides its declared refusals (the document's default response): an internal error, a
    /// worker or the database away.
    static let undeclaredAnywhere: Set<ErrorCode> = [.internalError, .serviceUnavailable, .timeout]
}
