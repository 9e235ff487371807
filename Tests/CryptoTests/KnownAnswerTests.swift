import Crypto
import Testing

/// Published known-answer vectors, byte for byte.
@Suite struct KnownAnswerTests {
    // FIPS 180-2 appendix B.1 ("abc") and the empty message.
    @Test func sha256MatchesPublishedDigests() {
        #expect(SHA256.hash("abc") == bytes("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(SHA256.hash([UInt8]()) == bytes("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
        #expect(SHA256.hash("abc".utf8) == SHA256.hash(Array("abc".utf8)))
        #expect(SHA256.hash(Array("xabcx".utf8)[1..<4]) == SHA256.hash("abc"))
    }

    // RFC 4231 section 4: test cases 1-4, 6 and 7 (case 5 is a truncated output).
    @Test(arguments: [
        (repeated(0x0b, 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (repeated(0xaa, 20), repeated(0xdd, 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        (Array(1...25), repeated(0xcd, 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        (repeated(0xaa, 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (repeated(0xaa, 131), Array(("This is a test using a larger than block-size key and a larger than block-size data."
                                     + " The key needs to be hashed before being used by the HMAC algorithm.").utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmacSHA256MatchesRFC4231(key: [UInt8], data: [UInt8], expected: String) {
        #expect(HMACSHA256.authenticationCode(key: key, data: data) == bytes(expected))
        #expect(HMACSHA256.isValid(bytes(expected), key: key, data: data))
        #expect(!HMACSHA256.isValid(flippingBit(255, of: bytes(expected)), key: key, data: data))
        #expect(!HMACSHA256.isValid(Array(bytes(expected).prefix(16)), key: key, data: data))
    }

    /// An empty key is legal HMAC; check it against the RFC 2104 definition built from SHA-256.
    @Test func hmacWithEmptyKeyFollowsRFC2104Definition() {
        let data = Array("facegate".utf8)
        let inner = SHA256.hash(repeated(0x36, 64) + data)
        let expected = SHA256.hash(repeated(0x5c, 64) + inner)
        #expect(HMACSHA256.authenticationCode(key: [], data: data) == expected)
    }

    // RFC 5869 appendix A.1-A.3 (SHA-256 cases).
    @Test(arguments: [
        (repeated(0x0b, 22), Array(0x00...0x0c), Array(0xf0...0xf9), 42,
         "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        (Array(0x00...0x4f), Array(0x60...0xaf), Array(0xb0...0xff), 82,
         """
         b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09
         da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87
         """),
        (repeated(0x0b, 22), [], [], 42,
         "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ] as [([UInt8], [UInt8], [UInt8], Int, String)])
    func hkdfSHA256MatchesRFC5869(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int, okm: String) throws {
        #expect(try HKDF.sha256(ikm: ikm, salt: salt, info: info, length: length) == bytes(okm))
    }

    // NIST SP 800-38A appendix F.2.1 (CBC-AES128.Encrypt). The four blocks are a whole number of
    // blocks, so PKCS#7 appends one full padding block after the published ciphertext.
    static let cbcKey = bytes("2b7e151628aed2a6abf7158809cf4f3c")
    static let cbcIV = bytes("000102030405060708090a0b0c0d0e0f")
    static let cbcPlaintext = bytes("""
        6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
        30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710
        """)
    static let cbcCiphertext = bytes("""
        7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2
        73bed6b8e3c1743b7116e69e22229516 3ff1caa1681fac09120eca307586e1a7
        """)

    @Test func aes128CBCMatchesSP800_38A() throws {
        let sealed = try AES128CBC.encrypt(key: Self.cbcKey, iv: Self.cbcIV, plaintext: Self.cbcPlaintext)
        #expect(sealed.count == 80)
        #expect(Array(sealed.prefix(64)) == Self.cbcCiphertext)
        #expect(try AES128CBC.decrypt(key: Self.cbcKey, iv: Self.cbcIV, ciphertext: sealed) == Self.cbcPlaintext)
        // Each vector prefix is a valid CBC chain too: one block in gives the first published block out.
        let oneBlock = try AES128CBC.encrypt(key: Self.cbcKey, iv: Self.cbcIV, plaintext: Array(Self.cbcPlaintext.prefix(16)))
        #expect(Array(oneBlock.prefix(16)) == Array(Self.cbcCiphertext.prefix(16)))
    }

    @Test func aes128CBCPadsEveryLength() throws {
        for length in 0...33 {
            let plaintext = Array(Self.cbcPlaintext.prefix(length))
            let sealed = try AES128CBC.encrypt(key: Self.cbcKey, iv: Self.cbcIV, plaintext: plaintext)
            #expect(sealed.count == (length / 16 + 1) * 16)
            #expect(try AES128CBC.decrypt(key: Self.cbcKey, iv: Self.cbcIV, ciphertext: sealed) == plaintext)
        }
    }

    // The GCM specification (McGrew & Viega, as adopted by NIST SP 800-38D), appendix B,
    // test cases 13-16: the 256-bit-key cases.
    @Test(arguments: [
        ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
         "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
        ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
         "00000000000000000000000000000000", "", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         """
         d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
         1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255
         """, "",
         """
         522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
         8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad
         """, "b094dac5d93471bdec1a502270e3cc6c"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         """
         d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
         1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39
         """, "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         """
         522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
         8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
         """, "76fc6ece0f4e1768cddf8853bb2d551b"),
    ])
    func aes256GCMMatchesGCMSpecification(key: String, nonce: String, plaintext: String, aad: String,
                                          ciphertext: String, tag: String) throws {
        let sealed = try AES256GCM.seal(key: bytes(key), plaintext: bytes(plaintext), authenticating: bytes(aad),
                                        nonce: bytes(nonce))
        #expect(sealed == bytes(nonce) + bytes(ciphertext) + bytes(tag))
        #expect(try AES256GCM.open(key: bytes(key), sealed: sealed, authenticating: bytes(aad)) == bytes(plaintext))
    }

    // RFC 8032 section 7.1, TEST 1-3: the private key is the 32-byte seed.
    @Test(arguments: [
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         """
         e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155
         5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b
         """),
        ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         """
         92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da
         085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00
         """),
        ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
         "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
         """
         6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac
         18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a
         """),
    ])
    func ed25519MatchesRFC8032(secretKey: String, publicKey: String, message: String, signature: String) throws {
        let privateKey = try Ed25519PrivateKey(seed: bytes(secretKey))
        #expect(privateKey.seed == bytes(secretKey))
        #expect(privateKey.publicKey.rawRepresentation == bytes(publicKey))
        #expect(try privateKey.signature(for: bytes(message)) == bytes(signature))

        let verifier = try Ed25519PublicKey(rawRepresentation: bytes(publicKey))
        #expect(verifier.isValidSignature(bytes(signature), for: bytes(message)))
        #expect(!verifier.isValidSignature(bytes(signature), for: bytes(message) + [0]))
        for bit in [0, 255, 256, 511] {
            #expect(!verifier.isValidSignature(flippingBit(bit, of: bytes(signature)), for: bytes(message)))
        }
    }

    // NIST CAVP, FIPS 186-3/186-4 ECDSA test vectors (186-3ecdsatestvectors.zip), SigVer.rsp,
    // section [P-256,SHA-256], a case with Result = P. The same values are quoted in wolfSSL's FIPS
    // ECDSA known-answer test (which also gives SHA-256(Msg) = d1b8ef21...5a94).
    static let cavpMessage = bytes("""
        e1130af6a38ccb412a9c8d13e15dbfc9e69a16385af3c3f1e5da954fd5e7c45fd75e2b8c36699228e92840c0562fbf37
        72f07e17f1add56588dd45f7450e1217ad239922dd9c32695dc71ff2424ca0dec1321aa47064a044b7fe3c2b97d03ce4
        70a592304c5ef21eed9f93da56bb232d1eeb0035f9bf0dfafdcc4606272b20a3
        """)
    static let cavpQx = bytes("e424dc61d4bb3cb7ef4344a7f8957a0c5134e16f7a67c074f82e6e12f49abf3c")
    static let cavpQy = bytes("970eed7aa2bc48651545949de1dddaf0127e5965ac85d1243d6f60e7dfaee927")
    static let cavpR = bytes("bf96b99aa49c705c910be33142017c642ff540c76349b9dab72f981fd9347f4f")
    static let cavpS = bytes("17c55095819089c2e03b9cd415abdf12444e323075d98f31920b9e0f57ec871c")

    /// SHA-512 of "abc" (FIPS 180-2 appendix C.1).
    @Test func sha512MatchesPublishedDigest() {
        #expect(SHA512.hash(Array("abc".utf8)) == bytes("""
            ddaf35a193617aba cc417349ae204131 12e6fa4e89a97ea2 0a9eeee64b55d39a
            2192992a274fc1a8 36ba3c23a3feebbd 454d4423643ce80e 2a9ac94fa54ca49f
            """))
    }

    /// An Ed25519 key's X25519 form, private and public, agrees with libsodium's `ed25519_convert` test
    /// (libsodium test/default/ed25519_convert.exp) and RFC 8032's test 1 key; each side gives the same public key.
    @Test(arguments: [
        ("421151a459faeade3d247115f94aedae42318124095afabe4d1451a559faedee", "f1814f0e8ff1043d8a44d25babff3cedcae6c22c3edaa48f857ae70de2baae50"),
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "d85e07ec22b0ad881537c2f44d662d1a143cf830c57aca4305d85c7a90f6b62e"),
    ])
    func ed25519KeysConvertToX25519(seed: String, x25519Public: String) throws {
        let key = try Ed25519PrivateKey(seed: bytes(seed))
        #expect(key.agreementKey.publicKey.rawRepresentation == bytes(x25519Public))
        #expect(try key.publicKey.agreementKey.rawRepresentation == bytes(x25519Public))
        let peer = X25519PrivateKey()
        #expect(try key.agreementKey.sharedSecret(with: peer.publicKey) == (try peer.sharedSecret(with: try key.publicKey.agreementKey)))
    }

    @Test func p256VerifiesCAVPSigVerVector() throws {
        #expect(SHA256.hash(Self.cavpMessage) == bytes("d1b8ef21eb4182ee270638061063a3f3c16c114e33937f69fb232cc833965a94"))
        let key = try P256PublicKey(spkiDER: p256SPKI(x: Self.cavpQx, y: Self.cavpQy))
        let signature = ecdsaDER(r: Self.cavpR, s: Self.cavpS)
        #expect(key.isValidSignature(derSignature: signature, for: Self.cavpMessage))
        #expect(!key.isValidSignature(derSignature: signature, for: flippingBit(0, of: Self.cavpMessage)))
        #expect(!key.isValidSignature(derSignature: ecdsaDER(r: Self.cavpR, s: flippingBit(255, of: Self.cavpS)),
                                      for: Self.cavpMessage))
        #expect(!key.isValidSignature(derSignature: signature + [0], for: Self.cavpMessage))  // trailing byte
    }
}

/// SubjectPublicKeyInfo for an uncompressed P-256 point (RFC 5480): SEQUENCE { SEQUENCE {
/// id-ecPublicKey, prime256v1 }, BIT STRING 04 ‖ X ‖ Y }.
func p256SPKI(x: [UInt8], y: [UInt8]) -> [UInt8] {
    let algorithm: [UInt8] = [0x30, 0x13,
                              0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                              0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
    let point: [UInt8] = [0x03, 0x42, 0x00, 0x04] + x + y
    return [0x30, UInt8(algorithm.count + point.count)] + algorithm + point
}

/// Ecdsa-Sig-Value DER: SEQUENCE { INTEGER r, INTEGER s } with minimal positive integers.
func ecdsaDER(r: [UInt8], s: [UInt8]) -> [UInt8] {
    func integer(_ value: [UInt8]) -> [UInt8] {
        var body = Array(value.drop { $0 == 0 })
        if body.isEmpty || body[0] & 0x80 != 0 { body.insert(0, at: 0) }
        return [0x02, UInt8(body.count)] + body
    }
    let content = integer(r) + integer(s)
    return [0x30, UInt8(content.count)] + content
}
