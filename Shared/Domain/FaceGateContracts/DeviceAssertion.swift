/// When the device may use its credential's key: only the biometrics enrolled at registration, any enrolled biometric, or
/// the device passcode. The gateway records it for the app's policy; the device enforces it. A string underneath, so
/// that a client reads a value a newer server names; the gateway accepts only `known`.
public struct DeviceCredentialPolicy: RawRepresentable, Sendable, Hashable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let biometryCurrentSet = DeviceCredentialPolicy(rawValue: "biometryCurrentSet")
    public static let biometryAny = DeviceCredentialPolicy(rawValue: "biometryAny")
    public static let devicePasscode = DeviceCredentialPolicy(rawValue: "devicePasscode")
    public static let known: [DeviceCredentialPolicy] = [.biometryCurrentSet, .biometryAny, .devicePasscode]
}

/// What a device signs to log in with its credential (`POST /v1/device-credentials/assertions`): every value the
/// gateway checks, one per line under a version label, as UTF-8; the signature is DER ECDSA/SHA-256 with the P-256 key.
public enum DeviceAssertion {
    public static let label = "facegate.device-assertion.v1"

    /// `appId` in lower case, as the API writes ids; `deviceId` as the challenge named it.
    public static func message(appId: String, deviceId: String, credentialId: String, challenge: String, counter: Int64) -> [UInt8] {
        Array([label, appId, deviceId, credentialId, challenge, String(counter)].joined(separator: "\n").utf8)
    }
}
