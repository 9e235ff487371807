import Foundation

/// The CTID envelope (v1): AES-128-CBC/PKCS#7 under the app's 16-byte institution key, authenticated
/// by HMAC-SHA256 over `"v1" ‖ iv ‖ ciphertext` with a key derived by HKDF-SHA256. The tag is checked
/// in constant time before anything is decrypted, and every fault is the same `CTIDEnvelopeError.invalid`,
/// so an attacker learns nothing about which part was wrong (no padding oracle).
public struct CTIDEnvelope: Codable, Sendable, Equatable {
    public static let currentVersion = "v1"
    public static let macInfo = "facegate ctid mac v1"

    public var version: String
    public var appId: String
    /// base64 of 16 bytes.
    public var iv: String
    /// base64 of the ciphertext.
    public var data: String
    /// base64 of the 32-byte tag.
    public var mac: String

    public init(version: String, appId: String, iv: String, data: String, mac: String) {
        self.version = version
        self.appId = appId
        self.iv = iv
        self.data = data
        self.mac = mac
    }
}

/// The single error of envelope handling: which check failed is deliberately not said.
public enum CTIDEnvelopeError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid
    public static let message = "the envelope is not valid"
    public var description: String { Self.message }
}
