import Crypto

/// The key tokens are signed with, and the `kid` that names it in the JWKS.
public struct JWTSigningKey: Sendable {
    public let kid: String
    let privateKey: Ed25519PrivateKey

    public init(kid: String, privateKey: Ed25519PrivateKey) {
        self.kid = kid
        self.privateKey = privateKey
    }

    public var publicKey: Ed25519PublicKey { privateKey.publicKey }

    /// The key of a 32-byte Ed25519 seed, its `kid` derived from the public key (`keyId`), so every
    /// process holding the seed signs under the same `kid`.
    public init(seed: [UInt8]) throws {
        let key = try Ed25519PrivateKey(seed: seed)
        self.init(kid: Self.keyId(key.publicKey), privateKey: key)
    }

    /// `kid`: the first 8 bytes of SHA-256 of the public key, base64url.
    public static func keyId(_ key: Ed25519PublicKey) -> String {
        Base64URL.encode(Array(SHA256.hash(key.rawRepresentation).prefix(8)))
    }
}

/// The public keys tokens are accepted from, looked up by `kid`. Holding the outgoing and the
/// incoming key side by side is how keys rotate.
public struct JWTKeySet: Sendable {
    private let ordered: [(kid: String, key: Ed25519PublicKey)]
    private let byKid: [String: Ed25519PublicKey]

    /// Two keys under one `kid` would make lookup ambiguous: that is a configuration error.
    public init(_ keys: [(kid: String, key: Ed25519PublicKey)]) {
        var byKid: [String: Ed25519PublicKey] = [:]
        for entry in keys {
            precondition(byKid.updateValue(entry.key, forKey: entry.kid) == nil, "JWTKeySet: duplicate kid")
        }
        self.ordered = keys
        self.byKid = byKid
    }

    func key(for kid: String) -> Ed25519PublicKey? { byKid[kid] }

    /// The RFC 7517 JWK Set, one OKP/Ed25519 key (RFC 8037) per entry, in the order given.
    public func jwksJSON() -> [UInt8] {
        let keys = ordered.map { entry in
            #"{"kty":"OKP","crv":"Ed25519","kid":"# + jsonString(entry.kid)
                + #","x":"# + jsonString(Base64URL.encode(entry.key.rawRepresentation))
                + #","use":"sig","alg":"EdDSA"}"#
        }
        return Array((#"{"keys":["# + keys.joined(separator: ",") + "]}").utf8)
    }
}

/// `text` as a JSON string literal (RFC 8259 section 7).
func jsonString(_ text: String) -> String {
    var output = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": output += "\\\""
        case "\\": output += "\\\\"
        case "\n": output += "\\n"
        case "\r": output += "\\r"
        case "\t": output += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: output.unicodeScalars.append(scalar)
        }
    }
    return output + "\""
}
