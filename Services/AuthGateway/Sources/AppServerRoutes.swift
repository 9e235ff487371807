import FaceGateCore
import Foundation
import HTTPServer
import JWT

/// App server API (HTTP Basic appId:appSecret): access tokens for its client apps, and the exchange of
/// a client's identity token for the verified user.
extension GatewayContext {
    func registerAppServerRoutes(on router: APIRoutes) {
        let appServers = router.group(appServer)
        appServers.add("POST", "/v1/access-tokens", maxBodyBytes: 4096) { [self] _, app in try issueAccessToken(app: app) }
        appServers.add("POST", "/v1/identity/exchange", maxBodyBytes: 8192) { [self] request, app in try await exchangeIdentity(request, app: app) }
    }

    func issueAccessToken(app: AppRecord) throws -> HTTPResponse {
        let claims = AccessTokenClaims(issuer: configuration.issuer, appId: app.id, issuedAt: Date(), ttl: configuration.accessTokenTTL)
        struct Issued: Encodable { var accessToken: String; var tokenType = "Bearer"; var expiresIn: Int }
        return .json(Issued(accessToken: try JWT.sign(claims, type: TokenType.access, key: signingKey), expiresIn: Int(configuration.accessTokenTTL)))
    }

    struct ExchangeBody: Decodable { var identityToken: String }

    struct Exchanged: Encodable {
        var userId: String
        var employeeNumber: String
        var name: String
        var appId: String
        var deviceId: String
        var method: String
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
                                   appId: app.id.wire, deviceId: exchanged.deviceId, method: exchanged.method,
                                   transactionId: exchanged.transactionId))
        }
    }
}
