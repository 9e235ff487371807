import FaceGateContracts
import Foundation
#if canImport(CryptoKit)
import CommonCrypto
import CryptoKit
#else
import Crypto
#endif

/// The CTID envelope v1 from the app's side (API.md): AES-128-CBC/PKCS#7 under the app's `ctidKey`,
/// HMAC-SHA256 with a key from HKDF-SHA256(ctidKey, salt empty, info "facegate ctid mac v1") over
/// `"v1" ‖ iv ‖ ciphertext`. An answer is decrypted only after its tag verified.
struct CTIDEnvelopeCipher: Sendable {
    static let version = CTIDEnvelope.currentVersion

    let appId: String
    let key: [UInt8]
    let macKey: [UInt8]

    init(appId: String, key: [UInt8]) throws(FaceGateError) {
        guard key.count == 16 else { throw .usage("the ctidKey must be 16 bytes") }
        self.appId = appId
        self.key = key
        macKey = try Primitives.hkdfSHA256(ikm: key, info: Array(CTIDEnvelope.macInfo.utf8), length: 32)
    }

    func seal(_ plaintext: [UInt8]) throws(FaceGateError) -> CTIDEnvelope {
        let iv = Primitives.randomBytes(16)
        let ciphertext = try Primitives.aes128CBCEncrypt(key: key, iv: iv, plaintext: plaintext)
        let tag = Primitives.hmacSHA256(key: macKey, data: Array(Self.version.utf8) + iv + ciphertext)
        return CTIDEnvelope(version: Self.version, appId: appId, iv: Data(iv).base64EncodedString(),
                        data: Data(ciphertext).base64EncodedString(), mac: Data(tag).base64EncodedString())
    }

    /// The plaintext of an answer envelope, or `.answerEnvelopeRejected` for any fault (which one is not said).
    func open(_ envelope: CTIDEnvelope) throws(FaceGateError) -> [UInt8] {
        guard envelope.version == Self.version, envelope.appId.lowercased() == appId.lowercased(),
              let iv = Data(base64Encoded: envelope.iv), iv.count == 16,
              let ciphertext = Data(base64Encoded: envelope.data), !ciphertext.isEmpty, ciphertext.count % 16 == 0,
              let tag = Data(base64Encoded: envelope.mac)
        else { throw .answerEnvelopeRejected }
        let expected = Primitives.hmacSHA256(key: macKey, data: Array(Self.version.utf8) + Array(iv) + Array(ciphertext))
        guard Primitives.constantTimeEquals(expected, Array(tag)) else { throw .answerEnvelopeRejected }
        return try Primitives.aes128CBCDecrypt(key: key, iv: Array(iv), ciphertext: Array(ciphertext))
    }
}

/// The few primitives the client needs: the project's OpenSSL wrapper on Linux, CryptoKit and
/// CommonCrypto on Apple platforms.
enum Primitives {
    #if canImport(CryptoKit)
    static func hkdfSHA256(ikm: [UInt8], info: [UInt8], length: Int) throws(FaceGateError) -> [UInt8] {
        let derived = HKDF<CryptoKit.SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), info: info, outputByteCount: length)
        return derived.withUnsafeBytes { Array($0) }
    }

    static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        Array(HMAC<CryptoKit.SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// The system generator is the platform CSPRNG on Apple platforms.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    static func aes128CBCEncrypt(key: [UInt8], iv: [UInt8], plaintext: [UInt8]) throws(FaceGateError) -> [UInt8] {
        try commonCrypto(CCOperation(kCCEncrypt), key: key, iv: iv, input: plaintext)
    }

    static func aes128CBCDecrypt(key: [UInt8], iv: [UInt8], ciphertext: [UInt8]) throws(FaceGateError) -> [UInt8] {
        do { return try commonCrypto(CCOperation(kCCDecrypt), key: key, iv: iv, input: ciphertext) } catch { throw .answerEnvelopeRejected }
    }

    private static func commonCrypto(_ operation: CCOperation, key: [UInt8], iv: [UInt8], input: [UInt8]) throws(FaceGateError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: input.count + kCCBlockSizeAES128)
        var written = 0
        let outputCount = output.count
        let status = output.withUnsafeMutableBytes { out in
            CCCrypt(operation, CCAlgorithm(kCCAlgorithmAES), CCOptions(kCCOptionPKCS7Padding), key, key.count, iv,
                    input, input.count, out.baseAddress, outputCount, &written)
        }
        guard status == CCCryptorStatus(kCCSuccess) else { throw .usage("AES-128-CBC failed (CommonCrypto \(status))") }
        return Array(output.prefix(written))
    }
    #else
    static func hkdfSHA256(ikm: [UInt8], info: [UInt8], length: Int) throws(FaceGateError) -> [UInt8] {
        do { return try HKDF.sha256(ikm: ikm, salt: [], info: info, length: length) } catch { throw .usage("\(error)") }
    }

    static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] { HMACSHA256.authenticationCode(key: key, data: data) }

    static func randomBytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool { Crypto.constantTimeEquals(a, b) }

    static func aes128CBCEncrypt(key: [UInt8], iv: [UInt8], plaintext: [UInt8]) throws(FaceGateError) -> [UInt8] {
        do { return try AES128CBC.encrypt(key: key, iv: iv, plaintext: plaintext) } catch { throw .usage("\(error)") }
    }

    static func aes128CBCDecrypt(key: [UInt8], iv: [UInt8], ciphertext: [UInt8]) throws(FaceGateError) -> [UInt8] {
        do { return try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext) } catch { throw .answerEnvelopeRejected }
    }
    #endif
}
