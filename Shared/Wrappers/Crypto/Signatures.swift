internal import COpenSSL

/// An Ed25519 private key (RFC 8032), held by OpenSSL.
public struct Ed25519PrivateKey: Sendable {
    let key: EVPKey
    public let publicKey: Ed25519PublicKey

    /// A fresh key from 32 bytes of CSPRNG output.
    public init() {
        do {
            (key, publicKey) = try Self.load(seed: SecureRandom.bytes(32))
        } catch {
            // A 32-byte seed is always a valid key; only allocation failure gets here.
            fatalError("\(error)")
        }
    }

    /// The key whose RFC 8032 private key (the 32-byte seed) is `seed`.
    public init(seed: [UInt8]) throws(CryptoError) {
        (key, publicKey) = try Self.load(seed: seed)
    }

    /// The 32-byte seed: secret, store it only in sealed form.
    public var seed: [UInt8] {
        var seed = [UInt8](repeating: 0, count: 32)
        var count = seed.count
        let status = seed.withUnsafeMutableBufferPointer { EVP_PKEY_get_raw_private_key(key.pointer, $0.baseAddress, &count) }
        guard status == 1, count == 32 else { fatalError("\(CryptoError.openSSL("Ed25519 private key export"))") }
        return seed
    }

    /// The 64-byte signature of `message` (deterministic, RFC 8032 PureEdDSA).
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try digestSign(key, digest: nil, message: message, operation: "Ed25519 sign")
    }

    private static func load(seed: [UInt8]) throws(CryptoError) -> (EVPKey, Ed25519PublicKey) {
        let operation = "Ed25519 private key import"
        guard seed.count == 32 else { throw .invalidInput(operation, "seed must be 32 bytes") }
        ERR_clear_error()
        let pointer = seed.withUnsafeBufferPointer {
            EVP_PKEY_new_raw_private_key_ex(nil, cName("ED25519"), nil, $0.baseAddress, $0.count)
        }
        guard let pointer else { throw .openSSL(operation) }
        let key = EVPKey(taking: pointer)
        var raw = [UInt8](repeating: 0, count: 32)
        var count = raw.count
        let status = raw.withUnsafeMutableBufferPointer { EVP_PKEY_get_raw_public_key(pointer, $0.baseAddress, &count) }
        guard status == 1, count == 32 else { throw .openSSL(operation) }
        return (key, try Ed25519PublicKey(rawRepresentation: raw))
    }
}

/// An Ed25519 public key.
public struct Ed25519PublicKey: Sendable, Hashable {
    let key: EVPKey
    /// The 32-byte encoded point (RFC 8032 section 5.1.5).
    public let rawRepresentation: [UInt8]

    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        let operation = "Ed25519 public key import"
        guard rawRepresentation.count == 32 else { throw .invalidInput(operation, "public key must be 32 bytes") }
        ERR_clear_error()
        let pointer = rawRepresentation.withUnsafeBufferPointer {
            EVP_PKEY_new_raw_public_key_ex(nil, cName("ED25519"), nil, $0.baseAddress, $0.count)
        }
        guard let pointer else { throw .openSSL(operation) }
        key = EVPKey(taking: pointer)
        self.rawRepresentation = rawRepresentation
    }

    /// True only for a valid 64-byte signature of exactly `message` under this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64 else { return false }
        return digestVerify(key, digest: nil, signature: signature, message: message)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawRepresentation == rhs.rawRepresentation }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawRepresentation) }
}

/// A P-256 (secp256r1) public key for ECDSA with SHA-256.
public struct P256PublicKey: Sendable, Hashable {
    let key: EVPKey
    /// The SubjectPublicKeyInfo DER, exactly as accepted.
    public let spkiDER: [UInt8]

    /// Accepts only a DER SubjectPublicKeyInfo of an EC key on the named curve P-256, with nothing
    /// after it and in canonical DER; refuses other curves, explicit curve parameters, RSA, EdDSA.
    public init(spkiDER: [UInt8]) throws(CryptoError) {
        let operation = "P-256 public key import"
        guard !spkiDER.isEmpty else { throw .invalidInput(operation, "empty key") }
        ERR_clear_error()
        var consumed = 0
        let parsed = spkiDER.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_PUBKEY(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return key
        }
        guard let parsed else { throw .openSSL(operation) }
        let key = EVPKey(taking: parsed)
        guard consumed == spkiDER.count else { throw .invalidInput(operation, "trailing bytes after the key") }
        guard EVP_PKEY_is_a(parsed, cName("EC")) == 1 else { throw .invalidInput(operation, "not an EC key") }
        guard utf8Parameter(of: key, "group") == "prime256v1" else { throw .invalidInput(operation, "curve is not P-256") }
        guard utf8Parameter(of: key, "encoding") == "named_curve" else {
            throw .invalidInput(operation, "explicit curve parameters are not accepted")
        }
        guard try encodeSPKI(key, operation) == spkiDER else { throw .invalidInput(operation, "key is not canonical DER") }
        let check = try KeyContext(for: key, operation)
        // d2i_PUBKEY already refused a point off the curve; P-256 has cofactor 1, so the full check's n·Q = O adds nothing.
        guard EVP_PKEY_public_check_quick(check.pointer) == 1 else { throw .openSSL(operation) }
        self.key = key
        self.spkiDER = spkiDER
    }

    /// True only for a valid DER-encoded ECDSA signature over SHA-256(`message`).
    public func isValidSignature(derSignature: [UInt8], for message: [UInt8]) -> Bool {
        guard !derSignature.isEmpty else { return false }
        return digestVerify(key, digest: "SHA256", signature: derSignature, message: message)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.spkiDER == rhs.spkiDER }
    public func hash(into hasher: inout Hasher) { hasher.combine(spkiDER) }
}

/// A P-256 private key, generated fresh; used by device clients and tests.
public struct P256PrivateKey: Sendable {
    let key: EVPKey
    public let publicKey: P256PublicKey

    public init() {
        do {
            (key, publicKey) = try Self.generate()
        } catch {
            fatalError("\(error)")  // key generation fails only when OpenSSL cannot allocate or seed its DRBG
        }
    }

    /// A DER-encoded ECDSA signature over SHA-256(`message`), with a random nonce.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try digestSign(key, digest: "SHA256", message: message, operation: "P-256 ECDSA sign")
    }

    /// A key saved with `derRepresentation`: P-256 only.
    public init(derRepresentation der: [UInt8]) throws(CryptoError) {
        let operation = "P-256 private key import"
        ERR_clear_error()
        var consumed = 0
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_AutoPrivateKey(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return key
        }
        guard let parsed else { throw .openSSL(operation) }
        let key = EVPKey(taking: parsed)
        guard consumed == der.count, EVP_PKEY_is_a(parsed, cName("EC")) == 1, utf8Parameter(of: key, "group") == "prime256v1" else {
            throw .invalidInput(operation, "not a P-256 private key")
        }
        self.key = key
        publicKey = try P256PublicKey(spkiDER: encodeSPKI(key, operation))
    }

    /// The private key as DER (SEC 1 `ECPrivateKey`, RFC 5915), for a device's own key file.
    public var derRepresentation: [UInt8] {
        let length = i2d_PrivateKey(key.pointer, nil)
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PrivateKey(key.pointer, &cursor)
        }
        return der
    }

    private static func generate() throws(CryptoError) -> (EVPKey, P256PublicKey) {
        let operation = "P-256 key generation"
        ERR_clear_error()
        let context = try KeyContext(algorithm: "EC", operation)
        guard EVP_PKEY_keygen_init(context.pointer) == 1,
              EVP_PKEY_CTX_set_group_name(context.pointer, cName("P-256")) == 1 else { throw .openSSL(operation) }
        var generated: OpaquePointer?
        guard EVP_PKEY_generate(context.pointer, &generated) == 1, let generated else { throw .openSSL(operation) }
        let key = EVPKey(taking: generated)
        return (key, try P256PublicKey(spkiDER: encodeSPKI(key, operation)))
    }
}

// MARK: - EVP one-shot signing shared by both curves

private func digestSign(_ key: EVPKey, digest: StaticString?, message: [UInt8], operation: String) throws(CryptoError) -> [UInt8] {
    ERR_clear_error()
    let context = try DigestContext(operation)
    guard EVP_DigestSignInit_ex(context.pointer, nil, digest.map(cName), nil, nil, key.pointer, nil) == 1 else {
        throw .openSSL(operation)
    }
    return try withNonNullBytes(message) { (pointer, count) throws(CryptoError) -> [UInt8] in
        var length = 0
        guard EVP_DigestSign(context.pointer, nil, &length, pointer, count) == 1 else { throw .openSSL(operation) }
        var signature = [UInt8](repeating: 0, count: length)
        let status = signature.withUnsafeMutableBufferPointer {
            EVP_DigestSign(context.pointer, $0.baseAddress, &length, pointer, count)
        }
        guard status == 1 else { throw .openSSL(operation) }
        signature.removeSubrange(length...)
        return signature
    }
}

private func digestVerify(_ key: EVPKey, digest: StaticString?, signature: [UInt8], message: [UInt8]) -> Bool {
    ERR_clear_error()
    // Any setup failure counts as "not valid": verification must fail closed.
    defer { ERR_clear_error() }  // a refused signature queues errors nobody else should read
    guard let context = try? DigestContext("verify"),
          EVP_DigestVerifyInit_ex(context.pointer, nil, digest.map(cName), nil, nil, key.pointer, nil) == 1 else {
        return false
    }
    return signature.withUnsafeBufferPointer { signatureBuffer in
        withNonNullBytes(message) { pointer, count in
            EVP_DigestVerify(context.pointer, signatureBuffer.baseAddress, signatureBuffer.count, pointer, count) == 1
        }
    }
}

private func encodeSPKI(_ key: EVPKey, _ operation: String) throws(CryptoError) -> [UInt8] {
    let length = i2d_PUBKEY(key.pointer, nil)
    guard length > 0 else { throw .openSSL(operation) }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return i2d_PUBKEY(key.pointer, &cursor)
    }
    guard written == length else { throw .openSSL(operation) }
    return der
}

private func utf8Parameter(of key: EVPKey, _ name: StaticString) -> String? {
    var buffer = [CChar](repeating: 0, count: 64)
    var length = 0
    let status = buffer.withUnsafeMutableBufferPointer {
        EVP_PKEY_get_utf8_string_param(key.pointer, cName(name), $0.baseAddress, $0.count, &length)
    }
    guard status == 1 else { return nil }
    return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
