#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto

/// The claims every FaceGate token carries (RFC 7519 section 4.1); times are seconds since 1970.
public struct JWTRegisteredClaims: Codable, Sendable, Equatable {
    public var iss: String
    public var aud: String
    public var sub: String?
    public var exp: Int64
    public var nbf: Int64?
    public var iat: Int64
    public var jti: String

    public init(iss: String, aud: String, sub: String? = nil, exp: Int64, nbf: Int64? = nil, iat: Int64, jti: String) {
        self.iss = iss
        self.aud = aud
        self.sub = sub
        self.exp = exp
        self.nbf = nbf
        self.iat = iat
        self.jti = jti
    }
}

/// Why a token was refused.
public enum JWTError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed, unknownKey, badSignature, algorithm, type, issuer, audience, expired, notYetValid

    /// The same token is refused again; the client needs a new one.
    public var isRetriable: Bool { false }

    public var description: String {
        switch self {
        case .malformed: "token is malformed"
        case .unknownKey: "token names no known key"
        case .badSignature: "token signature is invalid"
        case .algorithm: "token algorithm is not EdDSA"
        case .type: "token type is wrong"
        case .issuer: "token issuer is wrong"
        case .audience: "token audience is wrong"
        case .expired: "token has expired"
        case .notYetValid: "token is not valid yet"
        }
    }
}

/// Compact-serialised JWS tokens signed with Ed25519 (`alg: EdDSA`, RFC 8037).
public enum JWT {
    /// Header `{"alg":"EdDSA","typ":type,"kid":kid}`; the payload is `claims` as JSON.
    public static func sign<Claims: Encodable>(_ claims: Claims, type: String, key: JWTSigningKey) throws -> String {
        let header = #"{"alg":"EdDSA","typ":"# + jsonString(type) + #","kid":"# + jsonString(key.kid) + "}"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let payload = try encoder.encode(claims)
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload))
        let signature = try key.privateKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Checks, in this order: three strict base64url parts and a JSON header (no `crit`) →
    /// `kid` in `keys` → the Ed25519 signature over the exact signing input → the payload decodes
    /// → `alg == "EdDSA"` → `typ == type` → `iss == issuer` → `audience` is `aud` or one of it →
    /// `exp` (now must be before exp + leeway) → `nbf` (now + leeway must not be before nbf).
    /// The payload is interpreted only once the signature holds.
    public static func verify<Claims: Decodable>(
        _ token: String, as claimsType: Claims.Type, keys: JWTKeySet, type: String,
        issuer: String, audience: String, now: Date = Date(), leeway: TimeInterval = 30
    ) throws(JWTError) -> Claims {
        let utf8 = Array(token.utf8)
        let parts = utf8.split(separator: UInt8(ascii: "."), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(text(parts[0])),
              let payloadBytes = Base64URL.decode(text(parts[1])),
              let signature = Base64URL.decode(text(parts[2])),
              let header = try? JSONDecoder().decode(JOSEHeader.self, from: Data(headerBytes)),
              !header.hasCritical
        else { throw .malformed }

        guard let kid = header.kid, let key = keys.key(for: kid) else { throw .unknownKey }
        let signingInput = Array(utf8[..<parts[1].endIndex])
        guard key.isValidSignature(signature, for: signingInput) else { throw .badSignature }

        let decoder = JSONDecoder()
        let payload = Data(payloadBytes)
        guard let checked = try? decoder.decode(CheckedClaims.self, from: payload),
              let claims = try? decoder.decode(claimsType, from: payload)
        else { throw .malformed }

        guard header.alg == "EdDSA" else { throw .algorithm }
        guard header.typ == type else { throw .type }
        guard checked.iss == issuer else { throw .issuer }
        guard checked.aud.contains(audience) else { throw .audience }
        let seconds = now.timeIntervalSince1970
        guard seconds < Double(checked.exp) + leeway else { throw .expired }
        if let nbf = checked.nbf, seconds + leeway < Double(nbf) { throw .notYetValid }
        return claims
    }

    /// The header's string members, without any verification: for diagnostics only, never for
    /// decisions. Nil when the token has no decodable header of string members.
    public static func unverifiedHeader(_ token: String) -> [String: String]? {
        let utf8 = Array(token.utf8)
        guard let end = utf8.firstIndex(of: UInt8(ascii: ".")),
              let bytes = Base64URL.decode(text(utf8[..<end])) else { return nil }
        return try? JSONDecoder().decode([String: String].self, from: Data(bytes))
    }
}

/// Part of a token's text; the token was a String, so its pieces between dots are valid UTF-8.
private func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }

/// The JOSE header members verification reads.
private struct JOSEHeader: Decodable {
    let alg: String
    let typ: String?
    let kid: String?
    /// `crit` names extensions that must be understood; none are, so its presence refuses the token.
    let hasCritical: Bool

    private enum Key: String, CodingKey { case alg, typ, kid, crit }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        alg = try container.decode(String.self, forKey: .alg)
        typ = try container.decodeIfPresent(String.self, forKey: .typ)
        kid = try container.decodeIfPresent(String.self, forKey: .kid)
        hasCritical = container.contains(.crit)
    }
}

/// The registered claims verification checks; `aud` may be one string or an array (RFC 7519 4.1.3).
private struct CheckedClaims: Decodable {
    let iss: String
    let aud: [String]
    let exp: Int64
    let nbf: Int64?

    private enum Key: String, CodingKey { case iss, aud, exp, nbf }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        iss = try container.decode(String.self, forKey: .iss)
        if let single = try? container.decode(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try container.decode([String].self, forKey: .aud)
        }
        exp = try container.decode(Int64.self, forKey: .exp)
        nbf = try container.decodeIfPresent(Int64.self, forKey: .nbf)
    }
}
