import COpenSSL
import Crypto
import Testing

/// Tampered, truncated and foreign inputs are refused.
@Suite struct RefusalTests {
    let gcmKey = SecureRandom.bytes(32)

    @Test func gcmSealsWithFreshNoncesAndOpens() throws {
        let plaintext = Array("template bytes".utf8)
        let first = try AES256GCM.seal(key: gcmKey, plaintext: plaintext, authenticating: [1, 2])
        let second = try AES256GCM.seal(key: gcmKey, plaintext: plaintext, authenticating: [1, 2])
        #expect(first.count == 12 + plaintext.count + 16)
        #expect(first.prefix(12) != second.prefix(12))
        #expect(try AES256GCM.open(key: gcmKey, sealed: first, authenticating: [1, 2]) == plaintext)
        #expect(try AES256GCM.open(key: gcmKey, sealed: try AES256GCM.seal(key: gcmKey, plaintext: [])) == [])
    }

    @Test func gcmRefusesEveryFlippedBit() throws {
        let aad = Array("user-42".utf8)
        let sealed = try AES256GCM.seal(key: gcmKey, plaintext: Array(0..<40), authenticating: aad)
        for bit in 0..<(sealed.count * 8) {
            let error = #expect(throws: CryptoError.self) {
                try AES256GCM.open(key: gcmKey, sealed: flippingBit(bit, of: sealed), authenticating: aad)
            }
            #expect(error?.isAuthenticationFailure == true)
        }
        for bit in 0..<(aad.count * 8) {
            let error = #expect(throws: CryptoError.self) {
                try AES256GCM.open(key: gcmKey, sealed: sealed, authenticating: flippingBit(bit, of: aad))
            }
            #expect(error?.isAuthenticationFailure == true)
        }
        let wrongKey = #expect(throws: CryptoError.self) {
            try AES256GCM.open(key: flippingBit(0, of: gcmKey), sealed: sealed, authenticating: aad)
        }
        #expect(wrongKey?.isAuthenticationFailure == true)
        let missingAAD = #expect(throws: CryptoError.self) { try AES256GCM.open(key: gcmKey, sealed: sealed) }
        #expect(missingAAD?.isAuthenticationFailure == true)
    }

    @Test func gcmRefusesMisshapenInput() throws {
        let short = #expect(throws: CryptoError.self) { try AES256GCM.open(key: gcmKey, sealed: repeated(0, 27)) }
        #expect(short?.isAuthenticationFailure == false)
        #expect(throws: CryptoError.self) { try AES256GCM.seal(key: repeated(1, 16), plaintext: [1]) }
        #expect(throws: CryptoError.self) { try AES256GCM.seal(key: gcmKey, plaintext: [1], nonce: repeated(0, 16)) }
        #expect(throws: CryptoError.self) { try AES256GCM.open(key: repeated(1, 31), sealed: repeated(0, 40)) }
    }

    @Test func cbcRefusesWrongPadding() throws {
        // The SP 800-38A ciphertext carries no padding block; its last plaintext block ends in 0x10
        // without being sixteen 0x10 bytes, which PKCS#7 must refuse.
        let error = #expect(throws: CryptoError.self) {
            try AES128CBC.decrypt(key: KnownAnswerTests.cbcKey, iv: KnownAnswerTests.cbcIV,
                                  ciphertext: KnownAnswerTests.cbcCiphertext)
        }
        #expect(error?.openSSLCode != 0)
        #expect(error?.isAuthenticationFailure == false)
        #expect(error?.description.contains("bad decrypt") == true)

        // A block whose last byte decrypts to 0 is never valid padding.
        let zeroBlock = try AES128CBC.encrypt(key: KnownAnswerTests.cbcKey, iv: KnownAnswerTests.cbcIV, plaintext: repeated(0, 16))
        #expect(throws: CryptoError.self) {
            try AES128CBC.decrypt(key: KnownAnswerTests.cbcKey, iv: KnownAnswerTests.cbcIV, ciphertext: Array(zeroBlock.prefix(16)))
        }
    }

    @Test func cbcRefusesMisshapenInput() {
        let key = KnownAnswerTests.cbcKey, iv = KnownAnswerTests.cbcIV
        #expect(throws: CryptoError.self) { try AES128CBC.decrypt(key: key, iv: iv, ciphertext: []) }
        #expect(throws: CryptoError.self) { try AES128CBC.decrypt(key: key, iv: iv, ciphertext: repeated(0, 17)) }
        #expect(throws: CryptoError.self) { try AES128CBC.encrypt(key: repeated(0, 32), iv: iv, plaintext: [1]) }
        #expect(throws: CryptoError.self) { try AES128CBC.encrypt(key: key, iv: repeated(0, 12), plaintext: [1]) }
    }

    @Test func hkdfRefusesImpossibleLengths() throws {
        #expect(throws: CryptoError.self) { try HKDF.sha256(ikm: [1], salt: [], info: [], length: 0) }
        #expect(throws: CryptoError.self) { try HKDF.sha256(ikm: [1], salt: [], info: [], length: 8161) }
        #expect(try HKDF.sha256(ikm: [1], salt: [], info: [], length: 8160).count == 8160)
    }

    @Test func ed25519RefusesOtherKeysAndMisshapenInput() throws {
        let key = Ed25519PrivateKey()
        let other = Ed25519PrivateKey()
        let message = Array("challenge".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!other.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(Array(signature.prefix(63)), for: message))
        #expect(!key.publicKey.isValidSignature(signature + [0], for: message))
        #expect(try Ed25519PrivateKey(seed: key.seed).publicKey == key.publicKey)
        #expect(key.seed != other.seed)
        #expect(throws: CryptoError.self) { try Ed25519PrivateKey(seed: repeated(1, 31)) }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawRepresentation: repeated(1, 33)) }
    }

    @Test func p256SignsAndRefusesOtherKeys() throws {
        let key = P256PrivateKey()
        let other = P256PrivateKey()
        let message = Array("facegate.device-assertion.v1\napp\ndevice\ncred\nchallenge\n7".utf8)
        let signature = try key.signature(for: message)
        #expect(key.publicKey.isValidSignature(derSignature: signature, for: message))
        #expect(try key.signature(for: message) != signature)  // random nonce each time
        #expect(!other.publicKey.isValidSignature(derSignature: signature, for: message))
        #expect(!key.publicKey.isValidSignature(derSignature: signature, for: message + [0]))
        #expect(!key.publicKey.isValidSignature(derSignature: [], for: message))
        #expect(key.publicKey.spkiDER.count == 91)
        #expect(try P256PublicKey(spkiDER: key.publicKey.spkiDER) == key.publicKey)
    }

    @Test(arguments: [
        ("EC", "P-384", false, "curve is not P-256"),
        ("EC", "secp256k1", false, "curve is not P-256"),
        ("EC", "P-256", true, "explicit curve parameters"),
        ("RSA", nil, false, "not an EC key"),
        ("ED25519", nil, false, "not an EC key"),
    ] as [(StaticString, StaticString?, Bool, String)])
    func p256RefusesOtherKeyKinds(algorithm: StaticString, group: StaticString?, explicitParameters: Bool, reason: String) throws {
        let der = try #require(generatedSPKI(algorithm: algorithm, group: group, explicitParameters: explicitParameters))
        let error = #expect(throws: CryptoError.self) { try P256PublicKey(spkiDER: der) }
        #expect(error?.description.contains(reason) == true, "\(error?.description ?? "")")
    }

    @Test func p256RefusesDamagedEncodings() throws {
        let good = P256PrivateKey().publicKey.spkiDER
        let trailing = #expect(throws: CryptoError.self) { try P256PublicKey(spkiDER: good + [0]) }
        #expect(trailing?.description.contains("trailing bytes") == true)
        #expect(throws: CryptoError.self) { try P256PublicKey(spkiDER: Array(good.dropLast())) }
        #expect(throws: CryptoError.self) { try P256PublicKey(spkiDER: []) }
        // A point off the curve: the CAVP key with its y coordinate changed.
        let offCurve = p256SPKI(x: KnownAnswerTests.cavpQx, y: flippingBit(0, of: KnownAnswerTests.cavpQy))
        let offCurveError = #expect(throws: CryptoError.self) { try P256PublicKey(spkiDER: offCurve) }
        #expect(offCurveError?.openSSLCode != 0)
    }

    @Test func sharesKeysAcrossConcurrentTasks() async throws {
        let edKey = Ed25519PrivateKey()
        let ecKey = P256PrivateKey()
        let verified = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<25).allSatisfy { round in
                        let message = Array("task \(task) round \(round)".utf8)
                        guard let edSignature = try? edKey.signature(for: message),
                              let ecSignature = try? ecKey.signature(for: message) else { return false }
                        return edKey.publicKey.isValidSignature(edSignature, for: message)
                            && ecKey.publicKey.isValidSignature(derSignature: ecSignature, for: message)
                            && !edKey.publicKey.isValidSignature(edSignature, for: message + [1])
                    }
                }
            }
            return await group.allSatisfy { $0 }
        }
        #expect(verified)
    }

    @Test func base64URLIsStrictAndCanonical() {
        // RFC 4648 section 10, without padding.
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        for bad in ["Zg==", "Zh", "Zm9=", "Z", "Zm9v+", "Zm9v/", "Zm 9v", "Zm9v\n", "Zm9vY"] {
            #expect(Base64URL.decode(bad) == nil, "accepted \(bad)")
        }
        for _ in 0..<50 {
            let random = SecureRandom.bytes(Int(SecureRandom.bytes(1)[0]))
            #expect(Base64URL.decode(Base64URL.encode(random)) == random)
        }
    }

    @Test func hexRoundTripsAndRefusesJunk() {
        #expect(Hex.encode([0x00, 0xab, 0xff]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xab, 0xff])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("0x00") == nil)
    }

    @Test func constantTimeEqualsComparesContentAndLength() {
        #expect(constantTimeEquals([], []))
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
    }

    @Test func secureRandomGivesDistinctDraws() {
        #expect(SecureRandom.bytes(0) == [])
        #expect(SecureRandom.bytes(32).count == 32)
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
    }

    @Test func errorDescriptionsCarryNoKeyMaterial() throws {
        let key = repeated(0xab, 32)
        let plaintext = Array("secret-plaintext".utf8)
        let sealed = try AES256GCM.seal(key: key, plaintext: plaintext)
        let forged = #expect(throws: CryptoError.self) { try AES256GCM.open(key: key, sealed: flippingBit(100, of: sealed)) }
        let padding = #expect(throws: CryptoError.self) {
            // A fixed block whose decryption ends in bad padding (a random one has valid padding about once in 256 tries).
            try AES128CBC.decrypt(key: Array(key.prefix(16)), iv: repeated(0xab, 16), ciphertext: repeated(0x11, 16))
        }
        let badKey = #expect(throws: CryptoError.self) { try AES256GCM.seal(key: Array(key.prefix(20)), plaintext: plaintext) }
        for error in [forged, padding, badKey].compactMap({ $0 }) {
            for text in [error.description, error.debugDescription] {
                #expect(!text.lowercased().contains("abab"))
                #expect(!text.contains("secret"))
                #expect(!text.contains(Base64URL.encode(key)))
            }
        }
        #expect(forged?.description == "AES-256-GCM open failed: authentication failed")
    }
}

/// A SubjectPublicKeyInfo generated by OpenSSL directly, for key kinds the wrapper must refuse.
private func generatedSPKI(algorithm: StaticString, group: StaticString?, explicitParameters: Bool) -> [UInt8]? {
    func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
    guard let context = EVP_PKEY_CTX_new_from_name(nil, cString(algorithm), nil) else { return nil }
    defer { EVP_PKEY_CTX_free(context) }
    guard EVP_PKEY_keygen_init(context) == 1 else { return nil }
    if let group, EVP_PKEY_CTX_set_group_name(context, cString(group)) != 1 { return nil }
    if explicitParameters {
        let parameters = [
            OSSL_PARAM_construct_utf8_string(cString("encoding"), UnsafeMutablePointer(mutating: cString("explicit")), 0),
            OSSL_PARAM_construct_end(),
        ]
        guard parameters.withUnsafeBufferPointer({ EVP_PKEY_CTX_set_params(context, $0.baseAddress) }) == 1 else { return nil }
    }
    var key: OpaquePointer?
    guard EVP_PKEY_generate(context, &key) == 1, let key else { return nil }
    defer { EVP_PKEY_free(key) }
    let length = i2d_PUBKEY(key, nil)
    guard length > 0 else { return nil }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor = buffer.baseAddress
        return i2d_PUBKEY(key, &cursor)
    }
    return written == length ? der : nil
}
