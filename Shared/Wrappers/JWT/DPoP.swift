#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto

/// OAuth 2.0 Demonstrating Proof of Possession (RFC 9449) with P-256 keys (`ES256`): the device signs
/// each request with its own key; the key's RFC 7638 thumbprint is the device's identity.
public enum DPoP {
    public static let type = "dpop+jwt"
    /// Longest proof accepted, in bytes (a P-256 proof is about 600).
    public static let maxProofBytes = 4096

    /// RFC 7638 §3.2: SHA-256 of the required members in lexicographic order, no whitespace, base64url.
    public static func thumbprint(of key: P256PublicKey) -> String {
        let (x, y) = key.coordinates
        let members = #"{"crv":"P-256","kty":"EC","x":""# + Base64URL.encode(x) + #"","y":""# + Base64URL.encode(y) + #""}"#
        return Base64URL.encode(SHA256.hash(Array(members.utf8)))
    }

    /// base64url(SHA-256(bytes)): the form of `ath` (over the access token) and `dgst` (over the body).
    public static func digest(_ bytes: some Collection<UInt8>) -> String { Base64URL.encode(SHA256.hash(bytes)) }

    /// A proof for one request. `url` without query or fragment; `accessToken` when the request sends one
    /// (→ `ath`); `body` when the request has one (→ `dgst`).
    public static func proof(key: P256PrivateKey, method: String, url: String, accessToken: String? = nil, body: [UInt8] = [],
                             nonce: String? = nil, issuedAt: Date = Date(), jti: String = Base64URL.encode(SecureRandom.bytes(18))) throws -> String {
        let (x, y) = key.publicKey.coordinates
        let header = ProofHeader(typ: type, alg: "ES256", jwk: .init(kty: "EC", crv: "P-256", x: Base64URL.encode(x), y: Base64URL.encode(y)))
        let claims = ProofClaims(jti: jti, htm: method, htu: url, iat: Int64(issuedAt.timeIntervalSince1970), nonce: nonce,
                                 ath: accessToken.map { digest(Array($0.utf8)) }, dgst: body.isEmpty ? nil : digest(body))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let signingInput = Base64URL.encode(Array(try encoder.encode(header))) + "." + Base64URL.encode(Array(try encoder.encode(claims)))
        return signingInput + "." + Base64URL.encode(try key.rawSignature(for: Array(signingInput.utf8)))
    }

    /// Checks a proof as RFC 9449 §4.3 asks, in this order: one compact JWS of at most `maxProofBytes` →
    /// header `typ: dpop+jwt`, `alg: ES256`, a public P-256 `jwk` (no private part), no `crit` → the
    /// signature with that key → claims `jti`, `htm` = `method`, `htu` = one of `urls` (scheme and host
    /// compared case-insensitively, query and fragment ignored), `iat` no older than `maxAge` and no more
    /// than `leeway` ahead → `ath` = hash of `accessToken` when one was sent → `dgst` = hash of `body` when
    /// it is not empty. The `jti`'s single use is the caller's to enforce (it needs shared storage).
    public static func verify(_ proof: String, method: String, urls: [String], accessToken: String?, body: [UInt8],
                              now: Date = Date(), maxAge: TimeInterval = 300, leeway: TimeInterval = 60) throws(DPoPError) -> DPoPProof {
        let utf8 = Array(proof.utf8)
        guard utf8.count <= maxProofBytes else { throw .malformed("the proof is too long") }
        let parts = utf8.split(separator: UInt8(ascii: "."), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
              let claimBytes = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
              let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)) else {
            throw .malformed("not a compact JWS")
        }
        let decoder = JSONDecoder()
        guard let header = try? decoder.decode(ProofHeader.self, from: Data(headerBytes)) else { throw .malformed("the header is not a DPoP header") }
        guard header.typ == type, header.alg == "ES256", header.crit == nil else { throw .malformed("typ must be dpop+jwt and alg ES256") }
        guard header.jwk.kty == "EC", header.jwk.crv == "P-256", header.jwk.d == nil,
              let x = Base64URL.decode(header.jwk.x), let y = Base64URL.decode(header.jwk.y),
              let key = try? P256PublicKey(x: x, y: y) else {
            throw .malformed("jwk must be a public P-256 key")
        }
        guard key.isValidSignature(rawSignature: signature, for: Array(utf8[..<parts[1].endIndex])) else { throw .badSignature }
        guard let claims = try? decoder.decode(ProofClaims.self, from: Data(claimBytes)),
              (1...128).contains(claims.jti.utf8.count) else { throw .malformed("the claims need jti, htm, htu and iat") }
        guard claims.htm == method else { throw .method }
        guard urls.map(normalised).contains(normalised(claims.htu)) else { throw .url }
        let seconds = now.timeIntervalSince1970
        guard Double(claims.iat) >= seconds - maxAge, Double(claims.iat) <= seconds + leeway else { throw .stale }
        if let accessToken {
            guard claims.ath == digest(Array(accessToken.utf8)) else { throw .accessTokenHash }
        }
        if !body.isEmpty {
            guard claims.dgst == digest(body) else { throw .bodyDigest }
        }
        return DPoPProof(thumbprint: thumbprint(of: key), jti: claims.jti, issuedAt: claims.iat, nonce: claims.nonce)
    }

    /// Scheme and authority lowercased, query and fragment dropped, the path as sent.
    static func normalised(_ url: String) -> String {
        let withoutQuery = Array(url.utf8.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
        let separator = Array("://".utf8)
        guard let schemeEnd = withoutQuery.indices.first(where: { withoutQuery[$0...].starts(with: separator) }) else {
            return String(decoding: withoutQuery, as: UTF8.self)
        }
        let authorityStart = schemeEnd + separator.count
        let pathStart = withoutQuery[authorityStart...].firstIndex(of: UInt8(ascii: "/")) ?? withoutQuery.endIndex
        return String(decoding: withoutQuery[..<pathStart], as: UTF8.self).lowercased() + String(decoding: withoutQuery[pathStart...], as: UTF8.self)
    }

    struct ProofHeader: Codable {
        struct Key: Codable {
            var kty: String
            var crv: String
            var x: String
            var y: String
            var d: String?
        }
        var typ: String
        var alg: String
        var jwk: Key
        var crit: [String]?
    }

    struct ProofClaims: Codable {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int64
        var nonce: String?
        var ath: String?
        var dgst: String?
    }
}

/// What a valid proof establishes.
public struct DPoPProof: Sendable, Equatable {
    /// RFC 7638 thumbprint of the signing key: the device's identity.
    public var thumbprint: String
    public var jti: String
    public var issuedAt: Int64
    public var nonce: String?
}

/// Why a proof was refused.
public enum DPoPError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String), badSignature, method, url, stale, accessTokenHash, bodyDigest, replayed

    public var description: String {
        switch self {
        case .malformed(let why): "the DPoP proof is malformed: \(why)"
        case .badSignature: "the DPoP proof's signature does not verify with its key"
        case .method: "the DPoP proof was made for another HTTP method"
        case .url: "the DPoP proof was made for another URL"
        case .stale: "the DPoP proof is too old or from the future (iat)"
        case .accessTokenHash: "the DPoP proof does not cover this access token (ath)"
        case .bodyDigest: "the DPoP proof does not cover this request body (dgst)"
        case .replayed: "the DPoP proof was already used (jti)"
        }
    }
}
