internal import COpenSSL

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] { evpDigest(data, EVP_sha256(), byteCount, "SHA-256") }

    /// SHA-256 of the string's UTF-8 bytes.
    public static func hash(_ string: String) -> [UInt8] { hash(Array(string.utf8)) }
}

/// SHA-512 (FIPS 180-4).
public enum SHA512 {
    public static let byteCount = 64

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] { evpDigest(data, EVP_sha512(), byteCount, "SHA-512") }
}

private func evpDigest(_ data: some Collection<UInt8>, _ algorithm: OpaquePointer?, _ byteCount: Int, _ name: String) -> [UInt8] {
    func digest(_ data: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: byteCount)
        var written: UInt32 = 0
        let status = output.withUnsafeMutableBufferPointer { out in
            EVP_Digest(data.baseAddress, data.count, out.baseAddress, &written, algorithm, nil)
        }
        // Fails only when OpenSSL cannot allocate; no caller could recover from that.
        guard status == 1, written == byteCount else { fatalError("\(CryptoError.openSSL(name))") }
        return output
    }
    if let digest = data.withContiguousStorageIfAvailable({ digest($0) }) { return digest }
    return Array(data).withUnsafeBufferPointer { digest($0) }
}

/// HMAC-SHA256 (RFC 2104, FIPS 198-1).
public enum HMACSHA256 {
    public static let byteCount = 32

    public static func authenticationCode(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: byteCount)
        var written = 0
        let result = withNonNullBytes(key) { keyPointer, keyCount in
            withNonNullBytes(data) { dataPointer, dataCount in
                output.withUnsafeMutableBufferPointer { out in
                    EVP_Q_mac(nil, cName("HMAC"), nil, cName("SHA256"), nil, keyPointer, keyCount,
                              dataPointer, dataCount, out.baseAddress, out.count, &written)
                }
            }
        }
        // Fails only when OpenSSL cannot allocate; no caller could recover from that.
        guard result != nil, written == byteCount else { fatalError("\(CryptoError.openSSL("HMAC-SHA256"))") }
        return output
    }

    /// Compares in constant time; a tag of any other length is simply invalid.
    public static func isValid(_ tag: [UInt8], key: [UInt8], data: [UInt8]) -> Bool {
        constantTimeEquals(authenticationCode(key: key, data: data), tag)
    }
}

/// HKDF (RFC 5869).
public enum HKDF {
    /// HKDF-SHA256 extract-then-expand. An empty salt means HashLen zero bytes, as the RFC says.
    /// `length` must be 1...8160 (255 × 32).
    public static func sha256(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws(CryptoError) -> [UInt8] {
        let operation = "HKDF-SHA256"
        guard (1...255 * SHA256.byteCount).contains(length) else {
            throw .invalidInput(operation, "output length must be 1...8160 bytes")
        }
        let context = try KDFContext(algorithm: "HKDF", operation)
        var output = [UInt8](repeating: 0, count: length)
        // OSSL_PARAM records pointers, so every buffer stays lent until EVP_KDF_derive returns.
        let status = withNonNullBytes(ikm) { ikmPointer, ikmCount in
            withNonNullBytes(salt) { saltPointer, saltCount in
                withNonNullBytes(info) { infoPointer, infoCount in
                    var parameters = [
                        OSSL_PARAM_construct_utf8_string(cName("digest"), UnsafeMutablePointer(mutating: cName("SHA256")), 0),
                        OSSL_PARAM_construct_octet_string(cName("key"), UnsafeMutableRawPointer(mutating: ikmPointer), ikmCount),
                    ]
                    if saltCount > 0 {
                        parameters.append(OSSL_PARAM_construct_octet_string(cName("salt"), UnsafeMutableRawPointer(mutating: saltPointer), saltCount))
                    }
                    if infoCount > 0 {
                        parameters.append(OSSL_PARAM_construct_octet_string(cName("info"), UnsafeMutableRawPointer(mutating: infoPointer), infoCount))
                    }
                    parameters.append(OSSL_PARAM_construct_end())
                    return parameters.withUnsafeBufferPointer { parameterBuffer in
                        output.withUnsafeMutableBufferPointer { out in
                            EVP_KDF_derive(context.pointer, out.baseAddress, out.count, parameterBuffer.baseAddress)
                        }
                    }
                }
            }
        }
        guard status == 1 else { throw .openSSL(operation) }
        return output
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// Traps if the CSPRNG fails: continuing without randomness would be worse than stopping.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max), "SecureRandom.bytes: count out of range")
        guard count > 0 else { return [] }
        var output = [UInt8](repeating: 0, count: count)
        let status = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard status == 1 else { fatalError("\(CryptoError.openSSL("RAND_bytes"))") }
        return output
    }
}

/// Equality whose running time depends only on the lengths, never on where the bytes differ.
/// Lengths are treated as public.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { left in
        b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0 }
    }
}
