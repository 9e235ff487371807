internal import COpenSSL

/// AES-128 in CBC mode with PKCS#7 padding (SP 800-38A). Not authenticated on its own: callers
/// check a MAC over IV and ciphertext before decrypting.
public enum AES128CBC {
    public static let keyByteCount = 16
    public static let blockByteCount = 16

    public static func encrypt(key: [UInt8], iv: [UInt8], plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(encrypting: true, key: key, iv: iv, input: plaintext)
    }

    /// Throws when the ciphertext is not a positive whole number of blocks or its padding is wrong.
    public static func decrypt(key: [UInt8], iv: [UInt8], ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !ciphertext.isEmpty, ciphertext.count % blockByteCount == 0 else {
            throw .invalidInput("AES-128-CBC decrypt", "ciphertext must be a positive multiple of 16 bytes")
        }
        return try run(encrypting: false, key: key, iv: iv, input: ciphertext)
    }

    private static func run(encrypting: Bool, key: [UInt8], iv: [UInt8], input: [UInt8]) throws(CryptoError) -> [UInt8] {
        let operation = encrypting ? "AES-128-CBC encrypt" : "AES-128-CBC decrypt"
        guard key.count == keyByteCount else { throw .invalidInput(operation, "key must be 16 bytes") }
        guard iv.count == blockByteCount else { throw .invalidInput(operation, "IV must be 16 bytes") }
        let inputLength = try cLength(input.count, operation)
        ERR_clear_error()
        let context = try CipherContext(operation)
        let initialised = key.withUnsafeBufferPointer { keyBuffer in
            iv.withUnsafeBufferPointer { ivBuffer in
                encrypting
                    ? EVP_EncryptInit_ex2(context.pointer, EVP_aes_128_cbc(), keyBuffer.baseAddress, ivBuffer.baseAddress, nil)
                    : EVP_DecryptInit_ex2(context.pointer, EVP_aes_128_cbc(), keyBuffer.baseAddress, ivBuffer.baseAddress, nil)
            }
        }
        guard initialised == 1 else { throw .openSSL(operation) }

        var output = [UInt8](repeating: 0, count: input.count + blockByteCount)
        var updated: Int32 = 0
        var finished: Int32 = 0
        let ok = withNonNullBytes(input) { inputPointer, _ in
            output.withUnsafeMutableBufferPointer { out in
                let base = out.baseAddress!
                if inputLength > 0 {
                    let status = encrypting
                        ? EVP_EncryptUpdate(context.pointer, base, &updated, inputPointer, inputLength)
                        : EVP_DecryptUpdate(context.pointer, base, &updated, inputPointer, inputLength)
                    guard status == 1 else { return false }
                }
                let status = encrypting
                    ? EVP_EncryptFinal_ex(context.pointer, base + Int(updated), &finished)
                    : EVP_DecryptFinal_ex(context.pointer, base + Int(updated), &finished)
                return status == 1
            }
        }
        guard ok else {
            let error = CryptoError.openSSL(operation)
            cleanse(&output)  // drop partial plaintext
            throw error
        }
        output.removeSubrange(Int(updated + finished)...)
        return output
    }
}

/// AES-256-GCM (SP 800-38D) with a 96-bit nonce and a 128-bit tag.
/// Sealed layout: 12-byte nonce ‖ ciphertext ‖ 16-byte tag.
public enum AES256GCM {
    public static let keyByteCount = 32
    public static let nonceByteCount = 12
    public static let tagByteCount = 16

    /// Leave `nonce` nil to get a fresh random one. A nonce given here must never be reused with
    /// the same key (reuse reveals the XOR of plaintexts and allows forgeries); it exists for
    /// known-answer tests.
    public static func seal(key: [UInt8], plaintext: [UInt8], authenticating aad: [UInt8] = [],
                            nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        let operation = "AES-256-GCM seal"
        guard key.count == keyByteCount else { throw .invalidInput(operation, "key must be 32 bytes") }
        let nonce = nonce ?? SecureRandom.bytes(nonceByteCount)
        guard nonce.count == nonceByteCount else { throw .invalidInput(operation, "nonce must be 12 bytes") }
        let plaintextLength = try cLength(plaintext.count, operation)
        let aadLength = try cLength(aad.count, operation)
        ERR_clear_error()
        let context = try CipherContext(operation)
        let initialised = key.withUnsafeBufferPointer { keyBuffer in
            nonce.withUnsafeBufferPointer { nonceBuffer in
                EVP_EncryptInit_ex2(context.pointer, EVP_aes_256_gcm(), keyBuffer.baseAddress, nonceBuffer.baseAddress, nil)
            }
        }
        guard initialised == 1 else { throw .openSSL(operation) }

        var sealed = nonce + [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        let ok = withNonNullBytes(aad) { aadPointer, _ in
            withNonNullBytes(plaintext) { plaintextPointer, _ in
                sealed.withUnsafeMutableBufferPointer { out -> Bool in
                    let ciphertext = out.baseAddress! + nonceByteCount
                    var written: Int32 = 0
                    if aadLength > 0 {
                        guard EVP_EncryptUpdate(context.pointer, nil, &written, aadPointer, aadLength) == 1 else { return false }
                    }
                    if plaintextLength > 0 {
                        guard EVP_EncryptUpdate(context.pointer, ciphertext, &written, plaintextPointer, plaintextLength) == 1,
                              written == plaintextLength else { return false }
                    }
                    guard EVP_EncryptFinal_ex(context.pointer, ciphertext + plaintext.count, &written) == 1, written == 0 else {
                        return false
                    }
                    return EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount),
                                               ciphertext + plaintext.count) == 1
                }
            }
        }
        guard ok else { throw .openSSL(operation) }
        return sealed
    }

    /// Returns the plaintext only when the tag verifies; otherwise throws an error whose
    /// `isAuthenticationFailure` is true and returns nothing decrypted.
    public static func open(key: [UInt8], sealed: [UInt8], authenticating aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let operation = "AES-256-GCM open"
        guard key.count == keyByteCount else { throw .invalidInput(operation, "key must be 32 bytes") }
        guard sealed.count >= nonceByteCount + tagByteCount else {
            throw .invalidInput(operation, "sealed box shorter than nonce and tag")
        }
        let ciphertextCount = sealed.count - nonceByteCount - tagByteCount
        let ciphertextLength = try cLength(ciphertextCount, operation)
        let aadLength = try cLength(aad.count, operation)
        var tag = Array(sealed[(sealed.count - tagByteCount)...])
        ERR_clear_error()
        let context = try CipherContext(operation)

        enum Outcome { case opened, failed, forged }
        var plaintext = [UInt8](repeating: 0, count: ciphertextCount)
        let outcome = key.withUnsafeBufferPointer { keyBuffer in
            sealed.withUnsafeBufferPointer { sealedBuffer in
                withNonNullBytes(aad) { aadPointer, _ in
                    plaintext.withUnsafeMutableBufferPointer { out -> Outcome in
                        let nonce = sealedBuffer.baseAddress!
                        guard EVP_DecryptInit_ex2(context.pointer, EVP_aes_256_gcm(), keyBuffer.baseAddress, nonce, nil) == 1 else {
                            return .failed
                        }
                        var written: Int32 = 0
                        if aadLength > 0 {
                            guard EVP_DecryptUpdate(context.pointer, nil, &written, aadPointer, aadLength) == 1 else { return .failed }
                        }
                        if ciphertextLength > 0 {
                            guard EVP_DecryptUpdate(context.pointer, out.baseAddress, &written, nonce + nonceByteCount,
                                                    ciphertextLength) == 1 else { return .failed }
                        }
                        let tagSet = tag.withUnsafeMutableBytes {
                            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), $0.baseAddress)
                        }
                        guard tagSet == 1 else { return .failed }
                        // GCM's final step writes no bytes; the block only gives it a valid address.
                        var finalBlock = [UInt8](repeating: 0, count: AES128CBC.blockByteCount)
                        var finalWritten: Int32 = 0
                        let verified = finalBlock.withUnsafeMutableBufferPointer {
                            EVP_DecryptFinal_ex(context.pointer, $0.baseAddress, &finalWritten)
                        }
                        return verified > 0 ? .opened : .forged
                    }
                }
            }
        }
        switch outcome {
        case .opened:
            return plaintext
        case .failed:
            throw .openSSL(operation)
        case .forged:
            cleanse(&plaintext)
            throw .authenticationFailure(operation)
        }
    }
}
