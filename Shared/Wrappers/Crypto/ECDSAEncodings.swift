internal import COpenSSL

// P-256 in the shapes JOSE uses (RFC 7518 §3.4, RFC 7517): raw r‖s signatures and JWK coordinates,
// next to the DER forms OpenSSL speaks.

extension P256PublicKey {
    /// SubjectPublicKeyInfo header of an uncompressed P-256 point (RFC 5480): id-ecPublicKey,
    /// prime256v1, a 66-byte BIT STRING holding 0x04 ‖ x ‖ y.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A,
        0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ]

    /// A key from its affine coordinates (32 big-endian bytes each), checked to be on the curve.
    public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else { throw .invalidInput("P-256 public key import", "coordinates must be 32 bytes each") }
        try self.init(spkiDER: Self.spkiPrefix + x + y)
    }

    /// The affine coordinates, as a JWK carries them. Accepted keys are canonical named-curve SPKI,
    /// which OpenSSL writes with the uncompressed point: the last 64 bytes are x ‖ y.
    public var coordinates: (x: [UInt8], y: [UInt8]) {
        let point = spkiDER.suffix(64)
        return (Array(point.prefix(32)), Array(point.suffix(32)))
    }

    /// True only for a valid 64-byte r‖s ECDSA signature over SHA-256(`message`) (JWS `ES256`).
    public func isValidSignature(rawSignature: [UInt8], for message: [UInt8]) -> Bool {
        guard let der = ECDSASignature.der(fromRaw: rawSignature) else { return false }
        return isValidSignature(derSignature: der, for: message)
    }
}

extension P256PrivateKey {
    /// A 64-byte r‖s ECDSA signature over SHA-256(`message`) (JWS `ES256`).
    public func rawSignature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let raw = ECDSASignature.raw(fromDER: try signature(for: message)) else { throw .openSSL("P-256 ECDSA sign") }
        return raw
    }
}

/// Conversions between DER `ECDSA-Sig-Value` and fixed-width r‖s for P-256.
enum ECDSASignature {
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, 32, nil), BN_bin2bn(buffer.baseAddress! + 32, 32, nil))
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { return nil }
        defer { ECDSA_SIG_free(parsed) }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(ECDSA_SIG_get0_r(parsed), buffer.baseAddress, 32), BN_bn2binpad(ECDSA_SIG_get0_s(parsed), buffer.baseAddress! + 32, 32))
        }
        return written == (32, 32) ? raw : nil
    }
}
