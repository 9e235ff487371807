import Crypto
import AppRecords
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import ServiceKit

/// Every way a route group proves its caller (`APIRoutes.group`): the only code that reads a request's credentials to
/// learn who calls. (The device is proven with the body, by `DeviceProofs`; `IdempotentRequests` keeps answers per
/// credential.) Each proof notes the audit actor (`RequestCaller`); a proof of a caller of one app confines the request to
/// that app's rows (`Tenant`), an auditor's to reading across apps.
struct Callers: Sendable {
    let apps: any AppStore
    let apiKeys: any ApiKeyStore
    /// The gateway's access-token keys (current and previous).
    let keySet: JWTKeySet
    let issuer: String
    let bootstrapAdminKeyHash: [UInt8]?
    /// Per server credential (`FACEGATE_SERVER_CALL_RATE` a second).
    let serverCallRate: RateLimiter
    let interviewTokens: InterviewTokens
    /// Event-stream tickets, spent by `interviewOrEventTicket`.
    let kioskSessions: KioskSessions

    // MARK: - Authenticators

    /// Client apps: a Bearer access token (`requireClient`).
    var client: Authenticator<AppRecord> { Authenticator(.client) { try await requireClient($0) } }
    /// As `client`, for routes whose handlers then prove the device (`DeviceProofs`, `KioskProofs`).
    var device: Authenticator<AppRecord> { Authenticator(.device) { try await requireClient($0) } }
    /// App servers: HTTP Basic `appId:appSecret` (`requireAppServer`), the previous secret during its grace included
    /// (access tokens and identity exchange only).
    var appServer: Authenticator<AppServer> { Authenticator(.appServer) { try await requireAppServer($0, previousSecret: true) } }
    /// Operators whose key covers the route's `{appId}` (`operatorApp`).
    var appOperator: Authenticator<AppRecord> { Authenticator(.appOperator) { try await operatorApp($0) } }
    /// As `appOperator`, each key limited to `FACEGATE_SERVER_CALL_RATE` (enrollment, which runs the matcher).
    var limitedAppOperator: Authenticator<AppRecord> {
        Authenticator(.limitedAppOperator) { request in
            let app = try await operatorApp(request)
            try admitServerCall(request, appServer: nil)
            return app
        }
    }
    /// Any operator key, with the apps it covers.
    var anyOperator: Authenticator<OperatorScope> { Authenticator(.anyOperator) { try await requireAdmin($0) } }
    /// Operator keys that cover every app (app creation, key management).
    var globalOperator: Authenticator<OperatorScope> { Authenticator(.globalOperator) { try await requireAdmin($0, global: true) } }
    /// Auditors and operators: the apps the caller may read, nil meaning all (`requireAuditor`).
    var auditor: Authenticator<[UUID]?> { Authenticator(.auditor) { try await requireAuditor($0) } }

    /// The app server (HTTP Basic, its current secret, limited to `FACEGATE_SERVER_CALL_RATE`) or a client app (access token).
    var appServerOrClient: Authenticator<AppCaller> {
        Authenticator(.appServerOrClient) { request in
            guard AppCaller.sendsBasic(request) else { return AppCaller(app: try await requireClient(request), isAppServer: false) }
            let app = try await requireAppServer(request).app
            try admitServerCall(request, appServer: app)
            return AppCaller(app: app, isAppServer: true)
        }
    }

    /// The app server of the `{appId}` app, or an operator covering it; either limited to `FACEGATE_SERVER_CALL_RATE`.
    var appServerOrOperator: Authenticator<AppCaller> {
        Authenticator(.appServerOrOperator) { request in
            guard AppCaller.sendsBasic(request) else {
                let app = try await operatorApp(request)
                try admitServerCall(request, appServer: nil)
                return AppCaller(app: app, isAppServer: false)
            }
            let app = try await requireAppServer(request).app
            guard app.id == (try request.uuidParameter("appId")) else {
                throw APIError(.forbidden, "these app server credentials are for another app")
            }
            try admitServerCall(request, appServer: app)
            return AppCaller(app: app, isAppServer: true)
        }
    }

    /// The session of the path, proven by its interview token (`requireInterview`).
    var interview: Authenticator<UUID> { Authenticator(.interview) { try requireInterview($0) } }

    /// The interview token, or for the event stream a single-use ticket from `POST …/event-tickets` (`?ticket=`,
    /// spent here — so never for an upload route).
    var interviewOrEventTicket: Authenticator<UUID> {
        Authenticator(.interviewOrEventTicket) { request in
            guard Self.opensWithTicket(request), let ticket = request.query["ticket"] else { return try requireInterview(request) }
            let id = try request.uuidParameter("interviewId")
            try await kioskSessions.openWithTicket(ticket, session: id)
            return id
        }
    }

    /// A kiosk step: the client app's access token and the session's interview token, checked before a photo is read.
    var kioskStep: Authenticator<KioskStepCaller> {
        Authenticator(.kioskStep) { request in
            let app = try await requireClient(request)
            return KioskStepCaller(app: app, interviewId: try requireInterview(request))
        }
    }

    /// The event stream is opened with a ticket (and no interview token): the ticket, not the token, is the proof.
    static func opensWithTicket(_ request: HTTPRequest) -> Bool {
        request.query["ticket"] != nil && request.headers["X-Interview-Token"] == nil
    }

    // MARK: - Proofs

    /// An operator key's reach: every app (the bootstrap key, keys created without apps) or the listed ones.
    struct OperatorScope: Sendable {
        var appIds: [UUID]?

        var isGlobal: Bool { appIds == nil }

        func covers(_ appId: UUID) -> Bool { appIds?.contains(appId) ?? true }
    }

    /// Operator: the bootstrap key or an operator API key that is neither revoked nor expired. With `global`,
    /// an operator key limited to some apps is refused (app creation, key management).
    private func requireAdmin(_ request: HTTPRequest, global: Bool = false) async throws -> OperatorScope {
        let key = try bearer(request, missing: .unauthorized)
        let hash = SHA256.hash(Array(key.utf8))
        if let bootstrapAdminKeyHash, constantTimeEquals(bootstrapAdminKeyHash, hash) {
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
    private func operatorApp(_ request: HTTPRequest) async throws -> AppRecord {
        let scope = try await requireAdmin(request)
        guard let app = try await apps.find(try request.uuidParameter("appId")) else { throw APIError(.notFound, "no such app") }
        guard scope.covers(app.id) else { throw APIError(.forbidden, "this operator key does not cover that app") }
        Tenant.enter(app: app.id)
        return app
    }

    /// Auditor (or operator): returns the apps the caller may read, nil meaning all. The rest of the request
    /// reads across apps: the audit queries narrow themselves to these.
    private func requireAuditor(_ request: HTTPRequest) async throws -> [UUID]? {
        let key = try bearer(request, missing: .unauthorized)
        let hash = SHA256.hash(Array(key.utf8))
        if let bootstrapAdminKeyHash, constantTimeEquals(bootstrapAdminKeyHash, hash) {
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
    private func requireAppServer(_ request: HTTPRequest, previousSecret: Bool = false) async throws -> AppServer {
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
    private func requireClient(_ request: HTTPRequest) async throws -> AppRecord {
        let token = try bearer(request, missing: .accessTokenInvalid)
        let claims: AccessTokenClaims
        do {
            claims = try JWT.verify(token, as: AccessTokenClaims.self, keys: keySet, type: TokenType.access,
                                    issuer: issuer, audience: AccessTokenClaims.audience)
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

    /// The session named in the path, proven by its interview token (`X-Interview-Token` only: a token in
    /// a URL ends up in logs and browser history).
    private func requireInterview(_ request: HTTPRequest) throws -> UUID {
        let id = try request.uuidParameter("interviewId")
        guard let token = request.headers["X-Interview-Token"], interviewTokens.isValid(token, for: id) else {
            throw APIError(.unauthorized, "X-Interview-Token must be the token issued with this kiosk session")
        }
        return id
    }

    /// Server callers (operator keys, app servers) are limited per credential (`FACEGATE_SERVER_CALL_RATE`), never by the
    /// outcomes of their calls: an app server by its app, an operator by a hash of its key (which is never kept).
    private func admitServerCall(_ request: HTTPRequest, appServer: AppRecord?) throws {
        let key = appServer.map { "app:" + $0.id.wire }
            ?? "operator:" + Hex.encode(SHA256.hash(Array(((try? bearer(request, missing: .unauthorized)) ?? "").utf8)))
        guard serverCallRate.admit(key) else {
            let wait = serverCallRate.retryAfter(key)
            throw APIError(.rateLimited, "this credential has used up its calls for now (FACEGATE_SERVER_CALL_RATE); wait \(wait) s", retryAfter: wait)
        }
    }
}

/// The `Authorization: Bearer` credential of a request, or `missing` as the refusal.
func bearer(_ request: HTTPRequest, missing code: ErrorCode) throws -> String {
    guard let header = request.headers["Authorization"], header.lowercased().hasPrefix("bearer ") else {
        throw APIError(code, "an Authorization: Bearer credential is required")
    }
    let value = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
    guard !value.isEmpty, value.count <= 4096 else { throw APIError(code, "the Bearer credential is malformed") }
    return value
}

/// An app as a route group that admits its app server or another caller proved it: which of them called decides what
/// the answer may show.
struct AppCaller: Sendable {
    var app: AppRecord
    /// The app server (HTTP Basic), not a client app or an operator.
    var isAppServer: Bool

    /// Credentials in HTTP Basic, the app server's scheme: which authentication the group tries.
    static func sendsBasic(_ request: HTTPRequest) -> Bool {
        (request.headers["Authorization"] ?? "").lowercased().hasPrefix("basic ")
    }
}

/// A kiosk step's caller: the client app, and the session its interview token proved.
struct KioskStepCaller: Sendable {
    var app: AppRecord
    var interviewId: UUID
}

/// How each of `Callers`' proofs reads in the OpenAPI document.
extension CallerDocumentation {
    /// A client's access token and device proof (and on a header app, no `X-Device-Id`: INVALID_REQUEST).
    private static let token: [ErrorCode] = [.invalidRequest, .accessTokenInvalid, .accessTokenExpired, .dpopProofInvalid]

    /// Client apps whose routes take no device proof.
    static let client = CallerDocumentation(security: [[.accessToken]], errors: [.accessTokenInvalid, .accessTokenExpired])
    /// Client apps on a device (`DeviceProofs`): a DPoP proof on apps with deviceBinding dpop, `X-Device-Id` on header apps.
    static let device = CallerDocumentation(security: [[.accessToken, .deviceProof], [.accessToken]], headers: ["deviceId", "dpop"], errors: token)
    static let appServer = CallerDocumentation(security: [[.appServer]], errors: [.unauthorized], because: [.unauthorized: "unknown app or wrong secret"])
    static let appOperator = CallerDocumentation(security: [[.operatorKey]], errors: [.unauthorized, .forbidden, .notFound])
    static let limitedAppOperator = CallerDocumentation(security: [[.operatorKey]], errors: [.unauthorized, .forbidden, .notFound, .rateLimited])
    static let anyOperator = CallerDocumentation(security: [[.operatorKey]], errors: [.unauthorized])
    static let globalOperator = CallerDocumentation(security: [[.operatorKey]], errors: [.unauthorized, .forbidden],
                                                    because: [.forbidden: "an operator key limited to some apps"])
    static let auditor = CallerDocumentation(security: [[.auditorKey]], errors: [.unauthorized])
    static let appServerOrClient = CallerDocumentation(security: [[.accessToken], [.appServer]], headers: ["deviceId", "dpop"],
                                                       errors: token + [.unauthorized, .rateLimited])
    static let appServerOrOperator = CallerDocumentation(
        security: [[.operatorKey], [.appServer]], errors: [.unauthorized, .forbidden, .notFound, .rateLimited],
        because: [.forbidden: "app-server credentials of another app, an operator key not covering the app"])
    static let interview = CallerDocumentation(security: [[.interviewToken]], headers: ["interviewToken"], errors: [.unauthorized, .notFound, .sessionExpired],
                                               because: [.unauthorized: "not this session's interview token"])
    static let interviewOrEventTicket = CallerDocumentation(
        security: [[.interviewToken], []], errors: [.unauthorized, .notFound, .sessionExpired],
        because: [.unauthorized: "neither this session's interview token nor a live ticket"])
    static let kioskStep = CallerDocumentation(security: [[.accessToken, .interviewToken]], headers: ["interviewToken", "deviceId", "dpop"],
                                               errors: token + [.unauthorized, .notFound, .sessionExpired],
                                               because: [.unauthorized: "not this session's interview token"])
}
