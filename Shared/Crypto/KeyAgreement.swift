import COpenSSL

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
