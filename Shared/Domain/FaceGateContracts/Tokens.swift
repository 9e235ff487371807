import Foundation

/// The chain that records calls not owned by any app (operator actions such as creating an app).
public let platformAppId = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!

/// JWT `typ` values and claim sets of the tokens the gateway issues (EdDSA, verifiable offline with the JWKS).
public enum TokenType {
    public static let access = "at+jwt"
    public static let identity = "facegate-id+jwt"
}

/// Identity tokens the kiosk-orchestrator issues for kiosk logins are signed with its own key, whose `kid`
/// starts with this prefix in the JWKS: such a token is valid only with `method` "kiosk", so the kiosk's key
/// cannot vouch for a face login, and it never signs access tokens.
public enum KioskTokenKey {
    public static let kidPrefix = "kiosk-"
}

/// Access token: lets a client app of `appId` call the client API. `aud` is the API itself.
public struct AccessTokenClaims: Codable, Sendable {
    public static let audience = "facegate-api"
    public var iss: String
    public var aud: String
    public var sub: String
    public var exp: Int64
    public var nbf: Int64?
    public var iat: Int64
    public var jti: String
    public var appId: String
    /// True when the app server minted it with its previous secret, during that secret's grace: the token then dies with
    /// the previous secret (its expiry or its revocation), not at `exp`.
    public var prev: Bool?
    /// When it was minted, in milliseconds since 1970: `iat`'s whole seconds cannot tell a token minted just before a
    /// secret rotation from one minted just after it.
    public var mts: Int64?

    public init(issuer: String, appId: UUID, issuedAt: Date, ttl: TimeInterval, previousSecret: Bool = false,
                jti: String = UUID().uuidString.lowercased()) {
        self.iss = issuer
        self.aud = Self.audience
        self.sub = appId.uuidString.lowercased()
        self.iat = Int64(issuedAt.timeIntervalSince1970)
        self.nbf = iat
        self.exp = iat + Int64(ttl)
        self.jti = jti
        self.appId = sub
        self.prev = previousSecret ? true : nil
        self.mts = Int64((issuedAt.timeIntervalSince1970 * 1000).rounded(.down))
    }
}

/// Identity token: proof that `userId` of `appId` was verified on `deviceId` by `method`. `aud` is the app,
/// so only that app's server can exchange it; single use at `/v1/identity/exchange`.
public struct IdentityTokenClaims: Codable, Sendable {
    public var iss: String
    public var aud: String
    public var sub: String
    public var exp: Int64
    public var nbf: Int64?
    public var iat: Int64
    public var jti: String
    public var appId: String
    public var deviceId: String
    public var method: String
    public var transactionId: String
    /// RFC 7800 confirmation: the thumbprint of the device key the token was issued to (RFC 9449 §6.1),
    /// absent on apps that identify devices by header.
    public var cnf: KeyConfirmation?
    /// RFC 8176 authentication methods: `face` (a face match), `swk` (proof of a software-held device key bound to the
    /// user). Absent on tokens issued before the claim existed.
    public var amr: [String]?
    /// The registered kiosk that asked, on kiosk logins (its key is in `cnf`; it is not the user's possession factor).
    public var kioskId: String?

    public struct KeyConfirmation: Codable, Sendable, Equatable {
        public var jkt: String
        public init(jkt: String) { self.jkt = jkt }
    }

    public init(issuer: String, appId: UUID, userId: UUID, deviceId: String, method: String, transactionId: UUID,
                issuedAt: Date, ttl: TimeInterval, keyThumbprint: String? = nil, amr: [String]? = nil, kioskId: UUID? = nil,
                jti: String = UUID().uuidString.lowercased()) {
        self.iss = issuer
        self.aud = appId.uuidString.lowercased()
        self.sub = userId.uuidString.lowercased()
        self.iat = Int64(issuedAt.timeIntervalSince1970)
        self.nbf = iat
        self.exp = iat + Int64(ttl)
        self.jti = jti
        self.appId = aud
        self.deviceId = deviceId
        self.method = method
        self.transactionId = transactionId.uuidString.lowercased()
        self.cnf = keyThumbprint.map(KeyConfirmation.init)
        self.amr = amr
        self.kioskId = kioskId?.uuidString.lowercased()
    }
}
