import Crypto
import Foundation
import JWT
import Testing

/// Identity-token-shaped claims: the registered ones plus custom members.
struct IdentityClaims: Codable, Equatable {
    var iss: String
    var aud: String
    var sub: String?
    var exp: Int64
    var nbf: Int64?
    var iat: Int64
    var jti: String
    var method: String
    var appId: String
}

@Suite struct JWTTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)
    static let nowSeconds: Int64 = 1_750_000_000
    let privateKey = Ed25519PrivateKey()
    var signingKey: JWTSigningKey { JWTSigningKey(kid: "k-2025-06", privateKey: privateKey) }
    var keys: JWTKeySet { JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey)]) }

    func claims(exp: Int64 = nowSeconds + 300, nbf: Int64? = nil, aud: String = "facegate") -> IdentityClaims {
        IdentityClaims(iss: "https://auth.facegate.test", aud: aud, sub: "user-1", exp: exp, nbf: nbf,
                       iat: Self.nowSeconds, jti: "tx-1", method: "face", appId: "app-1")
    }

    func verify(_ token: String, keys: JWTKeySet? = nil, type: String = "identity+jwt",
                audience: String = "facegate", leeway: TimeInterval = 30) throws(JWTError) -> IdentityClaims {
        try JWT.verify(token, as: IdentityClaims.self, keys: keys ?? self.keys, type: type,
                       issuer: "https://auth.facegate.test", audience: audience, now: Self.now, leeway: leeway)
    }

    /// A token with any header and payload text, correctly signed by the suite's key.
    func forge(header: String, payload: String) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let signature = try privateKey.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    var header: String { #"{"alg":"EdDSA","typ":"identity+jwt","kid":"k-2025-06"}"# }

    func payload(_ extra: String = "", exp: Int64 = nowSeconds + 300) -> String {
        #"{"iss":"https://auth.facegate.test","aud":"facegate","exp":\#(exp),"iat":\#(Self.nowSeconds),"#
            + #""jti":"tx-1","method":"face","appId":"app-1"\#(extra)}"#
    }

    @Test func roundTripsClaims() throws {
        let original = claims(nbf: Self.nowSeconds)
        let token = try JWT.sign(original, type: "identity+jwt", key: signingKey)
        #expect(try verify(token) == original)
        #expect(JWT.unverifiedHeader(token) == ["alg": "EdDSA", "typ": "identity+jwt", "kid": "k-2025-06"])

        let registered = JWTRegisteredClaims(iss: "https://auth.facegate.test", aud: "facegate", exp: Self.nowSeconds + 60,
                                             iat: Self.nowSeconds, jti: "j")
        let plain = try JWT.sign(registered, type: "access+jwt", key: signingKey)
        #expect(try JWT.verify(plain, as: JWTRegisteredClaims.self, keys: keys, type: "access+jwt",
                               issuer: "https://auth.facegate.test", audience: "facegate", now: Self.now) == registered)
    }

    @Test func refusesMalformedTokens() throws {
        let token = try JWT.sign(claims(), type: "identity+jwt", key: signingKey)
        let parts = token.split(separator: ".").map(String.init)
        // 64 signature bytes take 86 symbols whose last one carries 4 unused bits; setting one of
        // them gives a twin that lax decoders read as the same signature.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let lastValue = try #require(alphabet.firstIndex(of: parts[2].last!))
        #expect(parts[2].count == 86 && lastValue & 0x0F == 0)
        let nonCanonical = parts[0] + "." + parts[1] + "." + parts[2].dropLast() + String(alphabet[lastValue | 0x01])
        let cases = [
            "", "abc", "a.b", parts[0] + "." + parts[1], token + ".", token + ".x", "." + token,
            parts[0] + "=." + parts[1] + "." + parts[2], token + "=", token + " ", " " + token,
            nonCanonical,
            try forge(header: "not json", payload: payload()),
            try forge(header: #"["EdDSA"]"#, payload: payload()),
            try forge(header: #"{"typ":"identity+jwt","kid":"k-2025-06"}"#, payload: payload()),
            try forge(header: #"{"alg":"EdDSA","typ":"identity+jwt","kid":"k-2025-06","crit":["exp"]}"#, payload: payload()),
            try forge(header: header, payload: "not json"),
            try forge(header: header, payload: #"{"iss":"https://auth.facegate.test","aud":"facegate"}"#),
            try forge(header: header, payload: payload().replacingOccurrences(of: #""method":"face","#, with: "")),
        ]
        for bad in cases {
            #expect(throws: JWTError.malformed, "accepted \(bad)") { try verify(bad) }
        }
        #expect(JWT.unverifiedHeader("%%%.x.y") == nil)
    }

    @Test func refusesUnknownKeys() throws {
        let stranger = JWTSigningKey(kid: "other", privateKey: Ed25519PrivateKey())
        #expect(throws: JWTError.unknownKey) { try verify(JWT.sign(claims(), type: "identity+jwt", key: stranger)) }
        #expect(throws: JWTError.unknownKey) {
            try verify(forge(header: #"{"alg":"EdDSA","typ":"identity+jwt"}"#, payload: payload()))
        }
        #expect(throws: JWTError.unknownKey) { try verify(JWT.sign(claims(), type: "identity+jwt", key: signingKey),
                                                          keys: JWTKeySet([])) }
    }

    @Test func refusesBadSignatures() throws {
        let token = try JWT.sign(claims(), type: "identity+jwt", key: signingKey)
        let parts = token.split(separator: ".").map(String.init)
        let otherPayload = Base64URL.encode(Array(payload(#","extra":1"#).utf8))
        let signingInput = Array((parts[0] + "." + parts[1]).utf8)
        let noneHeader = Base64URL.encode(Array(#"{"alg":"none","typ":"identity+jwt","kid":"k-2025-06"}"#.utf8))
        let hsHeader = Base64URL.encode(Array(#"{"alg":"HS256","typ":"identity+jwt","kid":"k-2025-06"}"#.utf8))
        let hsInput = hsHeader + "." + parts[1]
        let publicKey = signingKey.publicKey.rawRepresentation
        let cases = [
            parts[0] + "." + otherPayload + "." + parts[2],                        // payload swapped
            parts[0] + "." + parts[1] + "." + Base64URL.encode(flippingBit(3, of: Base64URL.decode(parts[2])!)),
            token + "AA",                                                          // trailing garbage
            parts[0] + "." + parts[1] + ".",                                       // no signature
            noneHeader + "." + parts[1] + ".",                                     // alg: none
            noneHeader + "." + parts[1] + "." + parts[2],
            // HS256 keyed with the public key, both as raw bytes and as its JWKS text.
            hsInput + "." + Base64URL.encode(HMACSHA256.authenticationCode(key: publicKey, data: Array(hsInput.utf8))),
            hsInput + "." + Base64URL.encode(HMACSHA256.authenticationCode(
                key: Array(Base64URL.encode(publicKey).utf8), data: Array(hsInput.utf8))),
            parts[0] + "." + parts[1] + "." + Base64URL.encode(HMACSHA256.authenticationCode(key: publicKey, data: signingInput)),
        ]
        for bad in cases {
            #expect(throws: JWTError.badSignature, "accepted \(bad)") { try verify(bad) }
        }
    }

    @Test func refusesAnotherAlgorithmEvenWhenSignedByTheKey() throws {
        for alg in ["none", "ES256", "HS256", "EdDSA ", "eddsa", "Ed25519"] {
            let token = try forge(header: #"{"alg":"\#(alg)","typ":"identity+jwt","kid":"k-2025-06"}"#, payload: payload())
            #expect(throws: JWTError.algorithm) { try verify(token) }
        }
    }

    @Test func refusesWrongTypeIssuerAndAudience() throws {
        let token = try JWT.sign(claims(), type: "identity+jwt", key: signingKey)
        #expect(throws: JWTError.type) { try verify(token, type: "access+jwt") }
        #expect(throws: JWTError.type) {
            try verify(forge(header: #"{"alg":"EdDSA","kid":"k-2025-06"}"#, payload: payload()))
        }
        #expect(throws: JWTError.issuer) {
            try JWT.verify(token, as: IdentityClaims.self, keys: keys, type: "identity+jwt",
                           issuer: "https://evil.test", audience: "facegate", now: Self.now)
        }
        #expect(throws: JWTError.audience) { try verify(token, audience: "other-app") }
    }

    @Test func acceptsAudienceArrays() throws {
        let listed = #"{"iss":"https://auth.facegate.test","aud":["a","facegate"],"exp":\#(Self.nowSeconds + 60)}"#
        let token = try forge(header: header, payload: listed)
        #expect(try JWT.verify(token, as: [String: JSONScalar].self, keys: keys, type: "identity+jwt",
                               issuer: "https://auth.facegate.test", audience: "facegate", now: Self.now)["aud"] != nil)
        #expect(throws: JWTError.audience) {
            try JWT.verify(token, as: [String: JSONScalar].self, keys: keys, type: "identity+jwt",
                           issuer: "https://auth.facegate.test", audience: "b", now: Self.now)
        }
    }

    @Test func honoursExpiryAndNotBeforeWithLeeway() throws {
        let lapsed = try JWT.sign(claims(exp: Self.nowSeconds - 10), type: "identity+jwt", key: signingKey)
        #expect(try verify(lapsed, leeway: 30).exp == Self.nowSeconds - 10)
        #expect(throws: JWTError.expired) { try verify(lapsed, leeway: 5) }
        let endsNow = try JWT.sign(claims(exp: Self.nowSeconds), type: "identity+jwt", key: signingKey)
        #expect(throws: JWTError.expired) { try verify(endsNow, leeway: 0) }

        let early = try JWT.sign(claims(nbf: Self.nowSeconds + 20), type: "identity+jwt", key: signingKey)
        #expect(try verify(early, leeway: 30).nbf == Self.nowSeconds + 20)
        #expect(throws: JWTError.notYetValid) { try verify(early, leeway: 10) }
        let future = try JWT.sign(claims(nbf: Self.nowSeconds + 60), type: "identity+jwt", key: signingKey)
        #expect(throws: JWTError.notYetValid) { try verify(future) }
    }

    @Test func checksInTheDocumentedOrder() throws {
        // Expired, wrong audience, wrong issuer and wrong type all at once: the type is reported.
        let token = try forge(header: #"{"alg":"EdDSA","typ":"x","kid":"k-2025-06"}"#,
                              payload: #"{"iss":"i","aud":"a","exp":1,"iat":1,"jti":"j","method":"m","appId":"a"}"#)
        #expect(throws: JWTError.type) { try verify(token) }
        // An unknown kid wins over a bad signature and a foreign algorithm.
        let unknown = try forge(header: #"{"alg":"none","typ":"x","kid":"nobody"}"#, payload: "{}") + "AA"
        #expect(throws: JWTError.unknownKey) { try verify(unknown) }
    }

    @Test func rotatesKeysByKid() throws {
        let previousKey = Ed25519PrivateKey()
        let previous = JWTSigningKey(kid: "k-2025-05", privateKey: previousKey)
        let both = JWTKeySet([(kid: previous.kid, key: previous.publicKey), (kid: signingKey.kid, key: signingKey.publicKey)])
        let oldToken = try JWT.sign(claims(), type: "identity+jwt", key: previous)
        let newToken = try JWT.sign(claims(), type: "identity+jwt", key: signingKey)
        #expect(try verify(oldToken, keys: both) == claims())
        #expect(try verify(newToken, keys: both) == claims())
        #expect(throws: JWTError.unknownKey) { try verify(oldToken, keys: keys) }
        // The old key signing under the new key's kid must not pass.
        let impostor = JWTSigningKey(kid: signingKey.kid, privateKey: previousKey)
        #expect(throws: JWTError.badSignature) { try verify(JWT.sign(claims(), type: "identity+jwt", key: impostor), keys: both) }
    }

    @Test func publishesJWKS() throws {
        let second = JWTSigningKey(kid: #"k"2"#, privateKey: Ed25519PrivateKey())
        let set = JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey), (kid: second.kid, key: second.publicKey)])
        let document = try JSONDecoder().decode([String: [[String: String]]].self, from: Data(set.jwksJSON()))
        #expect(document.keys.sorted() == ["keys"])
        let entries = try #require(document["keys"])
        #expect(entries.count == 2)
        for (entry, key) in zip(entries, [signingKey, second]) {
            #expect(entry == ["kty": "OKP", "crv": "Ed25519", "kid": key.kid, "use": "sig", "alg": "EdDSA",
                              "x": Base64URL.encode(key.publicKey.rawRepresentation)])
            let publishedX = try #require(entry["x"])
            let x = try #require(Base64URL.decode(publishedX))
            #expect(x.count == 32)
            // A verifier holding only the JWKS checks our tokens.
            let published = JWTKeySet([(kid: key.kid, key: try Ed25519PublicKey(rawRepresentation: x))])
            #expect(try verify(JWT.sign(claims(), type: "identity+jwt", key: key), keys: published) == claims())
        }
    }
}

/// Any JSON scalar or array of strings, for payloads without a fixed shape.
enum JSONScalar: Decodable {
    case string(String), number(Double), strings([String])
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else { self = .strings(try container.decode([String].self)) }
    }
}
