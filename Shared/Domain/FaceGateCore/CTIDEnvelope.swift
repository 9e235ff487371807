import Crypto
import Foundation

/// Sealing and opening (the wire shape is in FaceGateContracts).
extension CTIDEnvelope {
    /// HKDF-SHA256(IKM = key, salt = empty, info = "facegate ctid mac v1", L = 32).
    public static func macKey(for key: [UInt8]) throws(CTIDEnvelopeError) -> [UInt8] {
        guard key.count == AES128CBC.keyByteCount else { throw .invalid }
        do { return try HKDF.sha256(ikm: key, salt: [], info: Array(macInfo.utf8), length: 32) } catch { throw .invalid }
    }

    static func authenticatedBytes(iv: [UInt8], ciphertext: [UInt8]) -> [UInt8] {
        Array(currentVersion.utf8) + iv + ciphertext
    }

    /// Encrypts and authenticates `plaintext` for `appId`; `iv` is fresh random unless given (tests, worked examples).
    public static func seal(_ plaintext: [UInt8], appId: UUID, key: [UInt8], iv: [UInt8]? = nil) throws(CTIDEnvelopeError) -> CTIDEnvelope {
        let iv = iv ?? SecureRandom.bytes(AES128CBC.blockByteCount)
        let macKey = try macKey(for: key)
        let ciphertext: [UInt8]
        do { ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: plaintext) } catch { throw .invalid }
        let tag = HMACSHA256.authenticationCode(key: macKey, data: authenticatedBytes(iv: iv, ciphertext: ciphertext))
        return CTIDEnvelope(version: currentVersion, appId: appId.uuidString.lowercased(), iv: Data(iv).base64EncodedString(),
                            data: Data(ciphertext).base64EncodedString(), mac: Data(tag).base64EncodedString())
    }

    /// Checks version, app, shape and tag (constant time), and only then decrypts with `decrypt`
    /// (AES-128-CBC unless a caller substitutes it, e.g. to observe that it never ran for a forged envelope).
    public func open(expectedAppId: UUID, key: [UInt8],
                     decrypt: (_ key: [UInt8], _ iv: [UInt8], _ ciphertext: [UInt8]) throws -> [UInt8] = { key, iv, ciphertext in
                         try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext)
                     }) throws(CTIDEnvelopeError) -> [UInt8] {
        guard version == Self.currentVersion,
              let app = UUID(uuidString: appId), app == expectedAppId,
              let ivData = Data(base64Encoded: iv), ivData.count == AES128CBC.blockByteCount,
              let cipherData = Data(base64Encoded: data), !cipherData.isEmpty, cipherData.count % AES128CBC.blockByteCount == 0,
              let tagData = Data(base64Encoded: mac)
        else { throw .invalid }
        let ivBytes = Array(ivData)
        let ciphertext = Array(cipherData)
        let macKey = try Self.macKey(for: key)
        guard HMACSHA256.isValid(Array(tagData), key: macKey, data: Self.authenticatedBytes(iv: ivBytes, ciphertext: ciphertext)) else {
            throw .invalid
        }
        do { return try decrypt(key, ivBytes, ciphertext) } catch { throw .invalid }
    }
}
