import Foundation
import JWT

/// The one way identity tokens are minted. The gateway (face, device-biometric and kiosk logins) and the
/// kiosk-orchestrator (onboarding) each hold one with their own signing key; the claims, type and lifetime rules
/// are the same for both.
public struct IdentityTokenIssuer: Sendable {
    public let issuer: String
    public let key: JWTSigningKey
    /// Seconds a token is valid (`FACEGATE_IDENTITY_TOKEN_TTL_SECONDS`).
    public let ttl: TimeInterval

    public init(issuer: String, key: JWTSigningKey, ttl: TimeInterval) {
        self.issuer = issuer
        self.key = key
        self.ttl = ttl
    }

    /// A signed identity token for `user` of `app` on `device`; `keyThumbprint` binds it to a DPoP key (`cnf.jkt`), `amr`
    /// says which factors earned it (RFC 8176) and `kioskId` which registered kiosk asked.
    public func issue(app: UUID, user: UUID, device: String, method: String, transaction: UUID, keyThumbprint: String? = nil,
                      amr: [String], kioskId: UUID? = nil) throws -> String {
        let claims = IdentityTokenClaims(issuer: issuer, appId: app, userId: user, deviceId: device, method: method,
                                         transactionId: transaction, issuedAt: Date(), ttl: ttl, keyThumbprint: keyThumbprint, amr: amr,
                                         kioskId: kioskId)
        return try JWT.sign(claims, type: TokenType.identity, key: key)
    }
}
