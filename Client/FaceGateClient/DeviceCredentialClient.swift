import FaceGateContracts
import Foundation
import Synchronization
#if canImport(CryptoKit)
import CryptoKit
#else
import Crypto
#endif

/// The key of one device credential. An iOS app implements it with a Secure Enclave key whose access
/// control asks for the biometric; `SoftwareP256Signer` is the in-memory key for Linux and tests.
public protocol DeviceCredentialSigner: Sendable {
    /// The public key as a DER SubjectPublicKeyInfo of a P-256 key.
    func publicKeySPKI() async throws -> Data
    /// A DER ECDSA signature over SHA-256(`message`).
    func sign(_ message: Data) async throws -> Data
    /// The signature counter for the next assertion: strictly increasing, or always 0 for a key that keeps none.
    func nextCounter() async throws -> Int
}

extension DeviceCredentialSigner {
    public func nextCounter() async throws -> Int { 0 }
}

/// A P-256 key held in memory, with a counter that starts at 1.
public final class SoftwareP256Signer: DeviceCredentialSigner {
    #if canImport(CryptoKit)
    private let key = P256.Signing.PrivateKey()
    #else
    private let key = P256PrivateKey()
    #endif
    private let counter = Atomic<Int>(0)

    public init() {}

    public func publicKeySPKI() async throws -> Data {
        #if canImport(CryptoKit)
        key.publicKey.derRepresentation
        #else
        Data(key.publicKey.spkiDER)
        #endif
    }

    public func sign(_ message: Data) async throws -> Data {
        #if canImport(CryptoKit)
        try key.signature(for: message).derRepresentation
        #else
        Data(try key.signature(for: Array(message)))
        #endif
    }

    public func nextCounter() async throws -> Int { counter.add(1, ordering: .relaxed).newValue }
}

public struct DeviceCredentialChallenge: Sendable, Equatable, Decodable {
    public var challenge: String
    public var expiresIn: Int
    /// The device identity the server knows this device by (its key thumbprint when the app binds devices
    /// by key); the assertion signs it.
    public var deviceId: String?
}

/// Device biometric credentials: register a key after a face login, then log in by signing a server challenge.
public final class DeviceCredentialClient: Sendable {
    let transport: Transport

    public init(configuration: FaceGateConfiguration) {
        transport = Transport(configuration: configuration)
    }

    public func setAccessToken(_ token: String) { transport.setAccessToken(token) }

    /// `POST /v1/device-credentials`: spends a fresh face-login identity token of this device; returns the credential id.
    public func register(identityToken: String, signer: any DeviceCredentialSigner, policy: DeviceCredentialPolicy = .biometryCurrentSet,
                         attestation: Data? = nil) async throws(FaceGateError) -> String {
        let publicKey: Data
        do { publicKey = try await signer.publicKeySPKI() } catch { throw Self.signerError(error) }
        struct Body: Encodable { var identityToken: String; var publicKey: String; var policy: String; var attestation: String? }
        struct Answer: Decodable { var credentialId: String }
        let body = Body(identityToken: identityToken, publicKey: publicKey.base64EncodedString(), policy: policy.rawValue,
                        attestation: attestation?.base64EncodedString())
        return try await transport.send("POST", "/v1/device-credentials", body: .json(body)).decode(Answer.self).credentialId
    }

    /// `POST /v1/device-credentials/challenges`.
    public func challenge(credentialId: String) async throws(FaceGateError) -> DeviceCredentialChallenge {
        struct Body: Encodable { var credentialId: String }
        return try await transport.send("POST", "/v1/device-credentials/challenges", body: .json(Body(credentialId: credentialId)))
            .decode(DeviceCredentialChallenge.self)
    }

    /// `POST /v1/device-credentials/assertions`: signs `facegate.device-assertion.v1\n{appId}\n{deviceId}\n{credentialId}\n{challenge}\n{counter}`.
    public func assert(credentialId: String, challenge: DeviceCredentialChallenge, signer: any DeviceCredentialSigner) async throws(FaceGateError) -> FaceGateIdentity {
        let configuration = transport.configuration
        let counter: Int
        let signature: Data
        do {
            counter = try await signer.nextCounter()
            let message = DeviceAssertion.message(appId: configuration.appId.lowercased(), deviceId: challenge.deviceId ?? configuration.deviceId,
                                                  credentialId: credentialId, challenge: challenge.challenge, counter: Int64(counter))
            signature = try await signer.sign(Data(message))
        } catch {
            throw Self.signerError(error)
        }
        struct Body: Encodable { var credentialId: String; var challenge: String; var counter: Int; var signature: String }
        let body = Body(credentialId: credentialId, challenge: challenge.challenge, counter: counter, signature: signature.base64EncodedString())
        return try await transport.send("POST", "/v1/device-credentials/assertions", body: .json(body)).decode(FaceGateIdentity.self)
    }

    /// A fresh challenge, signed and asserted.
    public func authenticate(credentialId: String, signer: any DeviceCredentialSigner) async throws(FaceGateError) -> FaceGateIdentity {
        try await assert(credentialId: credentialId, challenge: try await challenge(credentialId: credentialId), signer: signer)
    }

    /// `DELETE /v1/device-credentials/{credentialId}` (only from the device that registered it).
    public func revoke(credentialId: String) async throws(FaceGateError) {
        guard let escaped = credentialId.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-"))) else {
            throw .usage("not a credential id")
        }
        _ = try await transport.send("DELETE", "/v1/device-credentials/\(escaped)")
    }

    static func signerError(_ error: any Error) -> FaceGateError {
        if let error = error as? FaceGateError { return error }
        if error is CancellationError { return .cancelled }
        return .usage("the device key refused: \(error)")
    }
}
