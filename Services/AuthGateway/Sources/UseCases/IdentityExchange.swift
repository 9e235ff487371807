import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import JWT

/// The app server's exchange of a client's identity token for the verified user (`POST /v1/identity/exchange`), without
/// HTTP. Single use: the token id is spent atomically; a second exchange, another app's token, an expired one or one with
/// the wrong `typ`/`aud`/`alg` is refused.
struct IdentityExchange: Sendable {
    /// The gateway's own token keys (face and device-biometric logins).
    let keys: JWTKeySet
    /// The kiosk-orchestrator's: they vouch for identity tokens of method `kiosk` and nothing else.
    let kioskKeys: JWTKeySet
    let issuer: String
    let spent: any SpentTokenIds
    let users: any UserDirectory

    struct Exchanged: Sendable, Equatable {
        var userId: UUID
        var user: UserProfile
        var deviceId: String
        var method: String
        /// How the login was earned (RFC 8176); tokens from before the claim answer what their method implies.
        var amr: [String]
        /// The registered kiosk that asked, for kiosk logins: an app server may refuse those where it wants a user's device.
        var kioskId: String?
        /// The transaction of the login that issued the token.
        var transactionId: String
    }

    func exchange(_ token: String, app: AppRecord, draft: inout TransactionDraft) async throws -> Exchanged {
        let claims: IdentityTokenClaims
        do {
            claims = try verify(token, app: app.id)
        } catch .expired {
            throw APIError(.identityTokenExpired, "the identity token has expired")
        } catch {
            throw APIError(.identityTokenInvalid, "the identity token is not valid for this app")
        }
        guard let userId = UUID(uuidString: claims.sub) else { throw APIError(.identityTokenInvalid, "the identity token is not valid for this app") }
        draft.userId = userId
        draft.deviceId = claims.deviceId
        guard try await spent.spend(claims.jti, appId: app.id, expiresAt: claims.exp) else {
            throw APIError(.identityTokenUsed, "the identity token was already exchanged")
        }
        guard let user = try await users.profile(of: userId, appId: app.id) else { throw APIError(.notFound, "the user no longer exists") }
        draft.detail = ["method": claims.method, "sourceTransactionId": claims.transactionId]
        let amr = claims.amr ?? (claims.method == "device_biometric" ? ["swk"] : ["face"])
        draft.detail["amr"] = amr.joined(separator: " ")
        if let kioskId = claims.kioskId { draft.detail["kioskId"] = kioskId }
        return Exchanged(userId: userId, user: user, deviceId: claims.deviceId, method: claims.method, amr: amr, kioskId: claims.kioskId,
                         transactionId: claims.transactionId)
    }

    /// An identity token of the gateway's keys, or of the kiosk-orchestrator's when its method is `kiosk`.
    private func verify(_ token: String, app: UUID) throws(JWTError) -> IdentityTokenClaims {
        do {
            return try JWT.verify(token, as: IdentityTokenClaims.self, keys: keys, type: TokenType.identity, issuer: issuer, audience: app.wire)
        } catch .unknownKey {
            let claims = try JWT.verify(token, as: IdentityTokenClaims.self, keys: kioskKeys, type: TokenType.identity, issuer: issuer,
                                        audience: app.wire)
            guard claims.method == "kiosk" else { throw .unknownKey }
            return claims
        }
    }
}

/// Access tokens for an app's client apps (`POST /v1/access-tokens`), without HTTP.
struct AccessTokens: Sendable {
    let issuer: String
    let key: JWTSigningKey
    /// `FACEGATE_ACCESS_TOKEN_TTL`.
    let ttl: TimeInterval

    /// A token; minted with the previous secret, it is marked so and lives no longer than that secret's grace.
    func issue(app: AppRecord, previousSecret: Bool) throws -> (token: String, expiresIn: Int) {
        var ttl = self.ttl
        if previousSecret, let until = app.previousSecretValidUntil { ttl = min(ttl, max(1, until.timeIntervalSinceNow.rounded(.down))) }
        let claims = AccessTokenClaims(issuer: issuer, appId: app.id, issuedAt: Date(), ttl: ttl, previousSecret: previousSecret)
        return (try JWT.sign(claims, type: TokenType.access, key: key), Int(ttl))
    }
}
