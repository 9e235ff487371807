import Crypto
import Foundation
import JWT
import Testing

@Suite("DPoP proofs (RFC 9449)")
struct DPoPTests {
    /// RFC 9449 §4.1, figure 4: the example proof, verified at its own `iat`; its key's thumbprint is the
    /// `jkt` of §6.1.
    static let rfcProof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19"
        + ".eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ"
        + ".2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
    static let rfcTime = Date(timeIntervalSince1970: 1_562_262_616)

    @Test func theRFCExampleVerifiesAndHasTheRFCThumbprint() throws {
        let proof = try DPoP.verify(Self.rfcProof, method: "POST", urls: ["https://server.example.com/token"], accessToken: nil, body: [],
                                    now: Self.rfcTime)
        #expect(proof.thumbprint == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        #expect(proof.jti == "-BwC3ESc6acc2lTc")
        #expect(throws: DPoPError.stale) {
            try DPoP.verify(Self.rfcProof, method: "POST", urls: ["https://server.example.com/token"], accessToken: nil, body: [])
        }
    }

    @Test func aProofCoversItsMethodURLTokenAndBody() throws {
        let key = P256PrivateKey()
        let body = Array("photo bytes".utf8)
        let url = "https://api.example.com/v1/face-login"
        let proof = try DPoP.proof(key: key, method: "POST", url: url, accessToken: "token-a", body: body)
        let checked = try DPoP.verify(proof, method: "POST", urls: ["HTTPS://API.example.com/v1/face-login"], accessToken: "token-a", body: body)
        #expect(checked.thumbprint == DPoP.thumbprint(of: key.publicKey))
        #expect(throws: DPoPError.method) { try DPoP.verify(proof, method: "PUT", urls: [url], accessToken: "token-a", body: body) }
        #expect(throws: DPoPError.url) {
            try DPoP.verify(proof, method: "POST", urls: ["https://api.example.com/v1/face-login/confirm"], accessToken: "token-a", body: body)
        }
        #expect(throws: DPoPError.accessTokenHash) { try DPoP.verify(proof, method: "POST", urls: [url], accessToken: "token-b", body: body) }
        #expect(throws: DPoPError.bodyDigest) {
            try DPoP.verify(proof, method: "POST", urls: [url], accessToken: "token-a", body: Array("another photo".utf8))
        }
        let old = try DPoP.proof(key: key, method: "POST", url: url, issuedAt: Date().addingTimeInterval(-301))
        #expect(throws: DPoPError.stale) { try DPoP.verify(old, method: "POST", urls: [url], accessToken: nil, body: []) }
        let future = try DPoP.proof(key: key, method: "POST", url: url, issuedAt: Date().addingTimeInterval(120))
        #expect(throws: DPoPError.stale) { try DPoP.verify(future, method: "POST", urls: [url], accessToken: nil, body: []) }
    }

    @Test func aSwappedKeyOrEditedClaimsBreakTheSignature() throws {
        let url = "https://api.example.com/v1/face-login"
        let proof = try DPoP.proof(key: P256PrivateKey(), method: "POST", url: url)
        let other = try DPoP.proof(key: P256PrivateKey(), method: "POST", url: url)
        let parts = proof.split(separator: ".").map(String.init)
        let otherParts = other.split(separator: ".").map(String.init)
        // Another key's header over this proof's claims and signature: the signature no longer holds.
        #expect(throws: DPoPError.badSignature) {
            try DPoP.verify([otherParts[0], parts[1], parts[2]].joined(separator: "."), method: "POST", urls: [url], accessToken: nil, body: [])
        }
        let edited = Base64URL.encode(Array(#"{"jti":"x","htm":"POST","htu":"https://api.example.com/v1/face-login","iat":1}"#.utf8))
        #expect(throws: DPoPError.badSignature) {
            try DPoP.verify([parts[0], edited, parts[2]].joined(separator: "."), method: "POST", urls: [url], accessToken: nil, body: [])
        }
    }

    @Test func headersThatAreNotDPoPAreRefused() throws {
        let url = "https://api.example.com/x"
        let parts = try DPoP.proof(key: P256PrivateKey(), method: "GET", url: url).split(separator: ".").map(String.init)
        let header = try JSONSerialization.jsonObject(with: Data(Base64URL.decode(parts[0])!)) as! [String: Any]
        for change in [["typ": "JWT"], ["alg": "HS256"], ["alg": "none"], ["crit": ["exp"]]] as [[String: Any]] {
            let edited = header.merging(change) { _, new in new }
            let text = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: edited)))
            #expect(throws: DPoPError.self) { try DPoP.verify([text, parts[1], parts[2]].joined(separator: "."), method: "GET", urls: [url], accessToken: nil, body: []) }
        }
        var jwk = header["jwk"] as! [String: String]
        jwk["d"] = "AAAA"
        let withPrivate = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: header.merging(["jwk": jwk]) { _, new in new })))
        #expect(throws: DPoPError.malformed("jwk must be a public P-256 key")) {
            try DPoP.verify([withPrivate, parts[1], parts[2]].joined(separator: "."), method: "GET", urls: [url], accessToken: nil, body: [])
        }
        for garbage in ["", "a.b", "a.b.c", String(repeating: "A", count: 5000)] {
            #expect(throws: DPoPError.self) { try DPoP.verify(garbage, method: "GET", urls: [url], accessToken: nil, body: []) }
        }
    }

    @Test func aDeviceKeySurvivesItsKeyFileAndSignsInJOSEForm() throws {
        let key = P256PrivateKey()
        let restored = try P256PrivateKey(derRepresentation: key.derRepresentation)
        #expect(restored.publicKey == key.publicKey)
        let message = Array("m".utf8)
        let raw = try restored.rawSignature(for: message)
        #expect(raw.count == 64)
        #expect(key.publicKey.isValidSignature(rawSignature: raw, for: message))
        #expect(!key.publicKey.isValidSignature(rawSignature: raw, for: Array("n".utf8)))
        let (x, y) = key.publicKey.coordinates
        #expect(try P256PublicKey(x: x, y: y) == key.publicKey)
        #expect(throws: CryptoError.self) { try P256PublicKey(x: x, y: x) }  // not on the curve
        #expect(throws: CryptoError.self) { try P256PrivateKey(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x01]) }
    }
}
