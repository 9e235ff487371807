import FaceGateCore
import Foundation
import HTTPServer
import JWT

/// App server API (HTTP Basic appId:appSecret): access tokens for its client apps, and the exchange of
/// a client's identity token for the verified user.
extension GatewayContext {
    func registerAppServerRoutes(on router: APIRoutes) {
        let appServers = router.group(appServer)
        appServers.add("POST", "/v1/access-tokens", answers: [AccessTokenIssued.self], maxBodyBytes: 4096) { [self] _, server in try issueAccessToken(server) }
        appServers.add("POST", "/v1/identity/exchange", answers: [Exchanged.self], maxBodyBytes: 8192) { [self] request, server in
            try await exchangeIdentity(request, app: server.app)
        }
    }

    /// An access token; minted with the previous secret, it is marked so and lives no longer than that secret's grace.
    func issueAccessToken(_ server: AppServer) throws -> HTTPResponse {
        var ttl = configuration.accessTokenTTL
        if server.previousSecret, let until = server.app.previousSecretValidUntil { ttl = min(ttl, max(1, until.timeIntervalSinceNow.rounded(.down))) }
        let claims = AccessTokenClaims(issuer: configuration.issuer, appId: server.app.id, issuedAt: Date(), ttl: ttl, previousSecret: server.previousSecret)
        return .json(AccessTokenIssued(accessToken: try JWT.sign(claims, type: TokenType.access, key: signingKey), expiresIn: Int(ttl)))
    }

    struct AccessTokenIssued: Encodable { var accessToken: String; var tokenType = "Bearer"; var expiresIn: Int }

    struct ExchangeBody: Decodable { var identityToken: String }

    struct Exchanged: Encodable {
        var userId: String
        var employeeNumber: String
        var name: String
        var appId: String
        var deviceId: String
        var method: String
        var amr: [String]
        var kioskId: String?
        var transactionId: String
    }

    var identityExchange: IdentityExchange {
        IdentityExchange(keys: keySet, kioskKeys: kioskKeySet, issuer: configuration.issuer, spent: spentTokenIds, users: users)
    }

    func exchangeIdentity(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(ExchangeBody.self)
        return try await recorded(request, kind: "identity.exchange", appId: app.id) { draft in
            let exchanged = try await identityExchange.exchange(body.identityToken, app: app, draft: &draft)
            return .json(Exchanged(userId: exchanged.userId.wire, employeeNumber: exchanged.user.employeeNumber, name: exchanged.user.name,
                                   appId: app.id.wire, deviceId: exchanged.deviceId, method: exchanged.method, amr: exchanged.amr,
                                   kioskId: exchanged.kioskId, transactionId: exchanged.transactionId))
        }
    }
}
