internal import COpenSSL

/// An X25519 private key (RFC 7748), for sealing data to a recipient's public key.
public struct X25519PrivateKey: Sendable {
    let key: EVPKey
    public let publicKey: X25519PublicKey

    public init() {
        do {
            (key, publicKey) = try Self.load(raw: SecureRandom.bytes(32))
        } catch {
            // Any 32 bytes are a valid X25519 private key; only allocation failure gets here.
            fatalError("\(error)")
        }
    }

    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        (key, publicKey) = try Self.load(raw: rawRepresentation)
    }

    /// The 32-byte private key: secret.
    public var rawRepresentation: [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        var count = raw.count
        let status = raw.withUnsafeMutableBufferPointer { EVP_PKEY_get_raw_private_key(key.pointer, $0.baseAddress, &count) }
        guard status == 1, count == 32 else { fatalError("\(CryptoError.openSSL("X25519 private key export"))") }
        return raw
    }

    /// The raw 32-byte shared secret with `peer`; refuses the all-zero result of a low-order peer key.
    public func sharedSecret(with peer: X25519PublicKey) throws(CryptoError) -> [UInt8] {
        let operation = "X25519 key agreement"
        ERR_clear_error()
        let context = try KeyContext(for: key, operation)
        guard EVP_PKEY_derive_init(context.pointer) == 1, EVP_PKEY_derive_set_peer(context.pointer, peer.key.pointer) == 1 else {
            throw .openSSL(operation)
        }
        var secret = [UInt8](repeating: 0, count: 32)
        var count = secret.count
        let status = secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context.pointer, $0.baseAddress, &count) }
        guard status == 1, count == 32 else { throw .openSSL(operation) }
        guard secret.contains(where: { $0 != 0 }) else { throw .invalidInput(operation, "low-order peer key") }
        return secret
    }

    private static func load(raw: [UInt8]) throws(CryptoError) -> (EVPKey, X25519PublicKey) {
        let operation = "X25519 private key import"
        guard raw.count == 32 else { throw .invalidInput(operation, "key must be 32 bytes") }
        ERR_clear_error()
        let pointer = raw.withUnsafeBufferPointer { EVP_PKEY_new_raw_private_key_ex(nil, cName("X25519"), nil, $0.baseAddress, $0.count) }
        guard let pointer else { throw .openSSL(operation) }
        let key = EVPKey(taking: pointer)
        var publicRaw = [UInt8](repeating: 0, count: 32)
        var count = publicRaw.count
        let status = publicRaw.withUnsafeMutableBufferPointer { EVP_PKEY_get_raw_public_key(pointer, $0.baseAddress, &count) }
        guard status == 1, count == 32 else { throw .openSSL(operation) }
        return (key, try X25519PublicKey(rawRepresentation: publicRaw))
    }
}

/// An X25519 public key.
public struct X25519PublicKey: Sendable {
    let key: EVPKey
    public let rawRepresentation: [UInt8]

    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        let operation = "X25519 public key import"
        guard rawRepresentation.count == 32 else { throw .invalidInput(operation, "key must be 32 bytes") }
        ERR_clear_error()
        let pointer = rawRepresentation.withUnsafeBufferPointer {
            EVP_PKEY_new_raw_public_key_ex(nil, cName("X25519"), nil, $0.baseAddress, $0.count)
        }
        guard let pointer else { throw .openSSL(operation) }
        key = EVPKey(taking: pointer)
        self.rawRepresentation = rawRepresentation
    }
}

// MARK: - One key pair for signing and sealing

extension Ed25519PrivateKey {
    /// The X25519 private key with the same secret scalar: the first half of SHA-512 of the seed (RFC 8032
    /// §5.1.5; X25519 clamps it the same way). This is libsodium's `crypto_sign_ed25519_sk_to_curve25519`; its
    /// public key is `publicKey.agreementKey`.
    public var agreementKey: X25519PrivateKey {
        do {
            return try X25519PrivateKey(rawRepresentation: Array(SHA512.hash(seed).prefix(32)))
        } catch {
            fatalError("\(error)")  // any 32 bytes are an X25519 private key
        }
    }
}

extension Ed25519PublicKey {
    /// The X25519 public key of the same point: the Montgomery u = (1 + y) / (1 − y) mod 2²⁵⁵ − 19 of the Edwards
    /// y coordinate (RFC 7748 §4.1), as libsodium's `crypto_sign_ed25519_pk_to_curve25519`.
    public var agreementKey: X25519PublicKey {
        get throws(CryptoError) {
            let operation = "Ed25519 to X25519 public key"
            var encoded = rawRepresentation
            encoded[31] &= 0x7f  // the sign bit of x
            guard let context = BN_CTX_new() else { throw .openSSL(operation) }
            defer { BN_CTX_free(context) }
            let (p, y, one, numerator, denominator, inverse, u) = (BN_new(), BN_new(), BN_new(), BN_new(), BN_new(), BN_new(), BN_new())
            defer { for number in [p, y, one, numerator, denominator, inverse, u] { BN_free(number) } }
            guard let p, let y, let one, let numerator, let denominator, let u,
                  BN_set_word(p, 1) == 1, BN_lshift(p, p, 255) == 1, BN_sub_word(p, 19) == 1, BN_set_word(one, 1) == 1,
                  encoded.withUnsafeBufferPointer({ BN_lebin2bn($0.baseAddress, 32, y) }) != nil,
                  BN_cmp(y, p) < 0,
                  BN_mod_add(numerator, one, y, p, context) == 1, BN_mod_sub(denominator, one, y, p, context) == 1,
                  !BN_is_zero(denominator).asBool,
                  BN_mod_inverse(inverse, denominator, p, context) != nil,
                  BN_mod_mul(u, numerator, inverse, p, context) == 1
            else { throw .invalidInput(operation, "not a point's encoding") }
            var raw = [UInt8](repeating: 0, count: 32)
            guard raw.withUnsafeMutableBufferPointer({ BN_bn2lebinpad(u, $0.baseAddress, 32) }) == 32 else { throw .openSSL(operation) }
            return try X25519PublicKey(rawRepresentation: raw)
        }
    }
}

private extension Int32 {
    var asBool: Bool { self != 0 }
}
