import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import ServiceKit
import Synchronization

/// An API error with its wire code; becomes the `{"error": {...}}` envelope.
struct APIError: Error {
    var code: ErrorCode
    var message: String
    var retryAfter: Int?
    /// Fields beside code and message in the error body (a refused photo's `reason` and `faces`).
    var details: [String: HTTPErrorDetail] = [:]

    init(_ code: ErrorCode, _ message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    func http(transactionId: UUID?) -> HTTPError {
        var headers: [(String, String)] = []
        if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
        if code == .unauthorized || code == .accessTokenInvalid || code == .accessTokenExpired {
            headers.append(("WWW-Authenticate", "Bearer"))
        } else if code == .dpopProofInvalid {
            headers.append(("WWW-Authenticate", #"DPoP algs="ES256", error="invalid_dpop_proof""#))
        }
        return HTTPError(status: code.httpStatus, code: code.rawValue, message: message,
                         transactionId: transactionId?.uuidString.lowercased(), headers: headers, details: details)
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

extension GatewayContext {
    /// Runs a call that authenticates or verifies, and writes exactly one transaction for it, whatever
    /// happens; errors carry the transaction id.
    func recorded(_ request: HTTPRequest, kind: String, appId: UUID, deviceId: String? = nil,
                  _ body: (inout TransactionDraft) async throws -> HTTPResponse) async throws -> HTTPResponse {
        let started = ContinuousClock.now
        var draft = TransactionDraft(appId: appId, kind: kind, deviceId: deviceId)
        var response: HTTPResponse?
        var failure: Error?
        do {
            response = try await body(&draft)
        } catch let error as APIError {
            draft.outcome = error.code.rawValue
            failure = error
        } catch let error as HTTPError {
            draft.outcome = error.code
            failure = error
        } catch {
            draft.outcome = ErrorCode.internalError.rawValue
            failure = error
            logger.error("call failed", ["request.id": request.requestId, "error": "\(error)"])
        }
        try await append(draft, for: request, started: started)
        if let error = failure as? APIError { throw error.http(transactionId: draft.id) }
        if let error = failure as? HTTPError {
            throw HTTPError(status: error.status, code: error.code, message: error.message, transactionId: draft.id.uuidString.lowercased(), headers: error.headers, details: error.details)
        }
        if failure != nil { throw APIError(.internalError, "internal error").http(transactionId: draft.id) }
        return response!
    }

    /// Writes `draft` as the call's transaction. Written outside the handler's task: a client that hangs up cancels that
    /// task, and the attempt must still reach the trail (with the call's trace, which a detached task does not inherit).
    /// No audit record, no answer: an unrecorded success would be a hole in the trail (`SERVICE_UNAVAILABLE`).
    func append(_ draft: TransactionDraft, for request: HTTPRequest, started: ContinuousClock.Instant) async throws {
        var draft = draft
        if var actor = RequestCaller.actor {
            // A client is its device; a registered kiosk's call names the kiosk.
            if actor == "client" { actor = draft.detail["kioskId"].map { "kiosk:" + $0 } ?? draft.deviceId.map { "client:" + $0 } ?? actor }
            draft.detail[TransactionRecord.actorKey] = actor
        }
        let record = TransactionRecord(id: draft.id, appId: draft.appId, kind: draft.kind, outcome: draft.outcome, userId: draft.userId,
                                       deviceId: draft.deviceId, clientIp: clientAddress(request), score: draft.score,
                                       latencyMs: Int((ContinuousClock.now - started).milliseconds.rounded()), detail: draft.detail)
        do {
            let (transactions, trace) = (self.transactions, TraceContext.current)
            try await Task.detached { try await TraceContext.$current.withValue(trace) { try await transactions.append(record) } }.value
        } catch {
            logger.error("transaction not recorded", ["request.id": request.requestId, "error": "\(error)"])
            throw APIError(.serviceUnavailable, "the audit trail is unavailable; try again")
        }
    }

    /// For calls that write no transaction unless refused (reads, challenges): runs `prove` (a device or kiosk proof) and
    /// records its refusal on the app's chain as `kind`, so a forged or replayed proof leaves a row like a refused login.
    func refusalRecorded<T>(_ request: HTTPRequest, kind: String, appId: UUID, _ prove: (inout TransactionDraft) async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        var draft = TransactionDraft(appId: appId, kind: kind)
        do {
            return try await prove(&draft)
        } catch let error as APIError {
            draft.outcome = error.code.rawValue
            draft.detail["route"] = request.method + " " + request.routeTemplate
            try await append(draft, for: request, started: started)
            throw error.http(transactionId: draft.id)
        }
    }

    // MARK: - Callers

    /// Client apps: a Bearer access token (`requireClient`).
    var client: Authenticator<AppRecord> { Authenticator { [self] in try await requireClient($0) } }
    /// App servers: HTTP Basic `appId:appSecret` (`requireAppServer`), the previous secret during its grace included
    /// (access tokens and identity exchange only).
    var appServer: Authenticator<AppServer> { Authenticator { [self] in try await requireAppServer($0, previousSecret: true) } }
    /// Operators whose key covers the route's `{appId}` (`operatorApp`).
    var appOperator: Authenticator<AppRecord> { Authenticator { [self] in try await operatorApp($0) } }
    /// Any operator key, with the apps it covers.
    var anyOperator: Authenticator<OperatorScope> { Authenticator { [self] in try await requireAdmin($0) } }
    /// Operator keys that cover every app (app creation, key management).
    var globalOperator: Authenticator<OperatorScope> { Authenticator { [self] in try await requireAdmin($0, global: true) } }
    /// Auditors and operators: the apps the caller may read, nil meaning all (`requireAuditor`).
    var auditor: Authenticator<[UUID]?> { Authenticator { [self] in try await requireAuditor($0) } }


    /// An operator key's reach: every app (the bootstrap key, keys created without apps) or the listed ones.
    struct OperatorScope: Sendable {
        var appIds: [UUID]?

        var isGlobal: Bool { appIds == nil }

        func covers(_ appId: UUID) -> Bool { appIds?.contains(appId) ?? true }
    }

    /// Operator: the bootstrap key or an operator API key that is neither revoked nor expired. With `global`,
    /// an operator key limited to some apps is refused (app creation, key management).
    func requireAdmin(_ request: HTTPRequest, global: Bool = false) async throws -> OperatorScope {
        let key = try bearer(request, missing: .unauthorized)
        let hash = SHA256.hash(Array(key.utf8))
        if let bootstrap = configuration.bootstrapAdminKeyHash, constantTimeEquals(bootstrap, hash) {
            RequestCaller.note("operator:bootstrap")
            return OperatorScope(appIds: nil)
        }
        guard let key = try await apiKeys.live(hash: hash), key.role == "admin" else {
            throw APIError(.unauthorized, "an operator key is required")
        }
        RequestCaller.note("operator:" + key.id.wire)
        let scope = OperatorScope(appIds: key.appIds)
        if global, !scope.isGlobal { throw APIError(.forbidden, "this operator key is limited to some apps; this needs a key for every app") }
        return scope
    }

    /// The app of an operator route (`{appId}`), checked against the caller's scope.
    func operatorApp(_ request: HTTPRequest) async throws -> AppRecord {
        let scope = try await requireAdmin(request)
        let app = try await existingApp(request)
        guard scope.covers(app.id) else { throw APIError(.forbidden, "this operator key does not cover that app") }
        Tenant.enter(app: app.id)
        return app
    }

    /// Auditor (or operator): returns the apps the caller may read, nil meaning all. The rest of the request
    /// reads across apps: the audit queries narrow themselves to these.
    func requireAuditor(_ request: HTTPRequest) async throws -> [UUID]? {
        let key = try bearer(request, missing: .unauthorized)
        let hash = SHA256.hash(Array(key.utf8))
        if let bootstrap = configuration.bootstrapAdminKeyHash, constantTimeEquals(bootstrap, hash) {
            RequestCaller.note("operator:bootstrap")
            Tenant.enterAcrossApps()
            return nil
        }
        guard let key = try await apiKeys.live(hash: hash) else { throw APIError(.unauthorized, "an auditor key is required") }
        RequestCaller.note((key.role == "admin" ? "operator:" : "auditor:") + key.id.wire)
        Tenant.enterAcrossApps()
        return key.appIds
    }

    /// An app server, and whether it proved itself with the previous secret (during its grace).
    struct AppServer: Sendable {
        var app: AppRecord
        var previousSecret: Bool
    }

    /// App server: HTTP Basic `appId:appSecret`. With `previousSecret`, the previous secret is honoured during its grace
    /// period (and the answer says it was used); elsewhere it is refused like a wrong secret, so a leaked old secret can
    /// mint short-lived access tokens at most, never tickets, searches or verdicts.
    func requireAppServer(_ request: HTTPRequest, previousSecret: Bool = false) async throws -> AppServer {
        guard let header = request.headers["Authorization"], header.lowercased().hasPrefix("basic "),
              let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":"),
              let appId = UUID(uuidString: String(text[..<colon])) else {
            throw APIError(.unauthorized, "app server credentials (HTTP Basic appId:appSecret) are required")
        }
        let secretHash = SHA256.hash(Array(text[text.index(after: colon)...].utf8))
        guard let app = try await apps.find(appId) else { throw APIError(.unauthorized, "unknown app or wrong secret") }
        RequestCaller.concerns(app.id)
        var usedPrevious = false
        if !constantTimeEquals(app.secretHash, secretHash) {
            guard previousSecret, app.previousSecretIsLive, let previous = app.previousSecretHash, constantTimeEquals(previous, secretHash) else {
                throw APIError(.unauthorized, "unknown app or wrong secret")
            }
            usedPrevious = true
        }
        RequestCaller.note("appServer:" + app.id.wire)
        Tenant.enter(app: app.id)
        return AppServer(app: app, previousSecret: usedPrevious)
    }

    /// Client app: a Bearer access token. Expired → `ACCESS_TOKEN_EXPIRED`, anything else wrong → `ACCESS_TOKEN_INVALID`.
    func requireClient(_ request: HTTPRequest) async throws -> AppRecord {
        let token = try bearer(request, missing: .accessTokenInvalid)
        let claims: AccessTokenClaims
        do {
            claims = try JWT.verify(token, as: AccessTokenClaims.self, keys: keySet, type: TokenType.access,
                                    issuer: configuration.issuer, audience: AccessTokenClaims.audience)
        } catch JWTError.expired {
            throw APIError(.accessTokenExpired, "the access token has expired; get a new one from your app server")
        } catch {
            throw APIError(.accessTokenInvalid, "the access token is not valid")
        }
        guard let appId = UUID(uuidString: claims.appId), let app = try await apps.find(appId) else {
            throw APIError(.accessTokenInvalid, "the access token's app does not exist")
        }
        RequestCaller.concerns(app.id)
        if let rotated = app.secretRotatedAt,
           claims.mts.map({ $0 < Int64((rotated.timeIntervalSince1970 * 1000).rounded(.down)) }) ?? (claims.iat < Int64(rotated.timeIntervalSince1970)) {
            throw APIError(.accessTokenExpired, "the app's secret was rotated since this access token was issued; get a new one from your app server")
        }
        if claims.prev == true, !app.previousSecretIsLive {
            throw APIError(.accessTokenExpired, "this access token was minted with the app's previous secret, which has expired or was revoked")
        }
        RequestCaller.note("client")
        Tenant.enter(app: app.id)
        return app
    }

    func bearer(_ request: HTTPRequest, missing code: ErrorCode) throws -> String {
        guard let header = request.headers["Authorization"], header.lowercased().hasPrefix("bearer ") else {
            throw APIError(code, "an Authorization: Bearer credential is required")
        }
        let value = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty, value.count <= 4096 else { throw APIError(code, "the Bearer credential is malformed") }
        return value
    }

    /// `X-Device-Id`: 1–128 printable ASCII characters.
    /// The client's address: the connection's, or — only when the connection comes from a configured
    /// trusted proxy — the nearest `X-Forwarded-For` entry that is not itself a trusted proxy.
    func clientAddress(_ request: HTTPRequest) -> String {
        guard configuration.trustedProxies.contains(request.remoteAddress),
              let forwarded = request.headers["X-Forwarded-For"] else { return request.remoteAddress }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last(where: { !configuration.trustedProxies.contains($0) }) ?? hops.first ?? request.remoteAddress
    }

    func deviceId(_ request: HTTPRequest) throws -> String {
        guard let value = request.headers["X-Device-Id"], (1...128).contains(value.utf8.count),
              value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError(.invalidRequest, "X-Device-Id is required: 1–128 printable ASCII characters")
        }
        return value
    }

    /// The image of a request: a raw `image/jpeg` / `image/png` body or the multipart field `image`,
    /// checked by its magic bytes (the matcher decodes it under the pixel cap).
    func image(_ request: HTTPRequest) throws -> [UInt8] {
        let contentType = (request.headers["Content-Type"] ?? "").lowercased()
        let bytes: [UInt8]
        if contentType.hasPrefix("multipart/form-data") {
            guard let part = try request.multipartParts().first(where: { $0.name == "image" }) else {
                throw APIError(.invalidRequest, "the multipart body has no field named image")
            }
            bytes = part.body
        } else if contentType.hasPrefix("image/jpeg") || contentType.hasPrefix("image/png") {
            bytes = request.body
        } else {
            throw APIError(.imageFormatError, "send the photo as image/jpeg, image/png or multipart/form-data with a field named image")
        }
        guard Self.isJPEGOrPNG(bytes) else { throw APIError(.imageFormatError, "the image is not a JPEG or PNG file") }
        return bytes
    }

    static func isJPEGOrPNG(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: [0xFF, 0xD8, 0xFF]) || bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    }
}

extension HTTPRequest {
    func uuidParameter(_ name: String) throws -> UUID {
        guard let text = pathParameters[name], let id = UUID(uuidString: text) else {
            throw APIError(.notFound, "no such \(name)")
        }
        return id
    }
}

/// Random secrets and keys: URL-safe text with a recognisable prefix, 256 bits of entropy.
func newSecret(prefix: String) -> String {
    prefix + Base64URL.encode(SecureRandom.bytes(32))
}
