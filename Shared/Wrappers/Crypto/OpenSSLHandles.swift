internal import COpenSSL

// Owners of OpenSSL handles. Each frees its handle in deinit; none of them leaves this module.

/// An `EVP_PKEY`, immutable once built.
final class EVPKey: @unchecked Sendable {  // never mutated after init; openssl-threads(7) allows concurrent read-only use
    let pointer: OpaquePointer
    init(taking pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }
}

/// An `EVP_MD_CTX`, used by one operation on one thread.
final class DigestContext {
    let pointer: OpaquePointer
    init(_ operation: String) throws(CryptoError) {
        guard let pointer = EVP_MD_CTX_new() else { throw .openSSL(operation) }
        self.pointer = pointer
    }
    deinit { EVP_MD_CTX_free(pointer) }
}

/// An `EVP_CIPHER_CTX`, used by one operation on one thread; cleared of key schedule on free.
final class CipherContext {
    let pointer: OpaquePointer
    init(_ operation: String) throws(CryptoError) {
        guard let pointer = EVP_CIPHER_CTX_new() else { throw .openSSL(operation) }
        self.pointer = pointer
    }
    deinit { EVP_CIPHER_CTX_free(pointer) }
}

/// An `EVP_PKEY_CTX` for key generation.
final class KeyContext {
    let pointer: OpaquePointer
    init(algorithm: StaticString, _ operation: String) throws(CryptoError) {
        guard let pointer = EVP_PKEY_CTX_new_from_name(nil, cName(algorithm), nil) else { throw .openSSL(operation) }
        self.pointer = pointer
    }
    init(for key: EVPKey, _ operation: String) throws(CryptoError) {
        guard let pointer = EVP_PKEY_CTX_new(key.pointer, nil) else { throw .openSSL(operation) }
        self.pointer = pointer
    }
    deinit { EVP_PKEY_CTX_free(pointer) }
}

/// An `EVP_KDF_CTX`.
final class KDFContext {
    let pointer: OpaquePointer
    init(algorithm: StaticString, _ operation: String) throws(CryptoError) {
        guard let kdf = EVP_KDF_fetch(nil, cName(algorithm), nil) else { throw .openSSL(operation) }
        defer { EVP_KDF_free(kdf) }  // the context holds its own reference
        guard let pointer = EVP_KDF_CTX_new(kdf) else { throw .openSSL(operation) }
        self.pointer = pointer
    }
    deinit { EVP_KDF_CTX_free(pointer) }
}

/// A C string that lives for the whole process, as OSSL_PARAM names and algorithm names must
/// outlive the call that reads them.
func cName(_ name: StaticString) -> UnsafePointer<CChar> {
    precondition(name.hasPointerRepresentation, "a C name must be a literal")
    return UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Lends `bytes` to C with a non-null pointer even when empty (some OpenSSL entry points treat
/// NULL as "not given" rather than "zero bytes").
func withNonNullBytes<R, E: Error>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) throws(E) -> R) throws(E) -> R {
    if bytes.isEmpty {
        var placeholder: UInt8 = 0
        return try withUnsafePointer(to: &placeholder) { (pointer) throws(E) -> R in try body(pointer, 0) }
    }
    return try bytes.withUnsafeBufferPointer { (buffer) throws(E) -> R in try body(buffer.baseAddress!, buffer.count) }
}

/// `count` as the `int` length most EVP cipher calls take.
func cLength(_ count: Int, _ operation: String) throws(CryptoError) -> Int32 {
    guard let length = Int32(exactly: count), length < Int32.max - 64 else {
        throw .invalidInput(operation, "input too long")
    }
    return length
}

/// Overwrites `bytes` with zeros in a way the optimiser cannot drop.
func cleanse(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
}
