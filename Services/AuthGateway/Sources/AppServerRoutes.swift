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

    /// An identity token of the gateway's keys, or of the kiosk-orchestrator's when its method is "kiosk"
    /// (the kiosk's key vouches for nothing else).
    func verifyIdentityToken(_ token: String, app: UUID) throws(JWTError) -> IdentityTokenClaims {
        do {
            return try JWT.verify(token, as: IdentityTokenClaims.self, keys: keySet, type: TokenType.identity,
                                  issuer: configuration.issuer, audience: app.wire)
        } catch .unknownKey {
            let claims = try JWT.verify(token, as: IdentityTokenClaims.self, keys: kioskKeySet, type: TokenType.identity,
                                        issuer: configuration.issuer, audience: app.wire)
            guard claims.method == "kiosk" else { throw .unknownKey }
            return claims
        }
    }

    /// Single use: the token id is recorded atomically; a second exchange, another app's token, an
    /// expired one or one with the wrong `typ`/`aud`/`alg` is refused.
    func exchangeIdentity(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(ExchangeBody.self)
        return try await recorded(request, kind: "identity.exchange", appId: app.id) { draft in
            let claims: IdentityTokenClaims
            do {
                claims = try verifyIdentityToken(body.identityToken, app: app.id)
            } catch JWTError.expired {
                throw APIError(.identityTokenExpired, "the identity token has expired")
            } catch {
                throw APIError(.identityTokenInvalid, "the identity token is not valid for this app")
            }
            guard let userId = UUID(uuidString: claims.sub) else { throw APIError(.identityTokenInvalid, "the identity token is not valid for this app") }
            draft.userId = userId
            draft.deviceId = claims.deviceId
            guard try await spentTokenIds.spend(claims.jti, appId: app.id, expiresAt: claims.exp) else {
                throw APIError(.identityTokenUsed, "the identity token was already exchanged")
            }
            guard let user = try await users.profile(of: userId, appId: app.id) else { throw APIError(.notFound, "the user no longer exists") }
            draft.detail = ["method": claims.method, "sourceTransactionId": claims.transactionId]
            return .json(Exchanged(userId: userId.wire, employeeNumber: user.employeeNumber, name: user.name,
                                   appId: app.id.wire, deviceId: claims.deviceId, method: claims.method, transactionId: claims.transactionId))
        }
    }
}
