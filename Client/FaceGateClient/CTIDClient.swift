import FaceGateContracts
import Foundation

/// The identity to verify; dates `YYYYMMDD` (end may be `长期`), photo JPEG/PNG for portrait modes.
public struct CTIDIdentity: Sendable, Equatable {
    public var idNumber: String
    public var name: String
    public var validDateStart: String?
    public var validDateEnd: String?
    public var photo: Data?

    public init(idNumber: String, name: String, validDateStart: String? = nil, validDateEnd: String? = nil, photo: Data? = nil) {
        self.idNumber = idNumber
        self.name = name
        self.validDateStart = validDateStart
        self.validDateEnd = validDateEnd
        self.photo = photo
    }
}

/// The opened answer envelope (the contract the ctid-verifier seals).
public typealias CTIDVerificationResult = CTIDVerificationAnswer

/// CTID identity verification: serial number, then the identity sealed in a v1 envelope under the app's
/// `ctidKey`; the answer envelope is verified (MAC first) and opened here.
public final class CTIDClient: Sendable {
    let transport: Transport
    let cipher: CTIDEnvelopeCipher

    /// `ctidKey`: the 16 bytes the operator received as `ctidKey` (base64) when the app was created.
    public init(configuration: FaceGateConfiguration, ctidKey: Data) throws(FaceGateError) {
        transport = Transport(configuration: configuration)
        cipher = try CTIDEnvelopeCipher(appId: configuration.appId, key: Array(ctidKey))
    }

    /// `ctidKey` as the base64 text the operator API shows.
    public convenience init(configuration: FaceGateConfiguration, ctidKeyBase64: String) throws(FaceGateError) {
        guard let key = Data(base64Encoded: ctidKeyBase64) else { throw .usage("ctidKey is not base64") }
        try self.init(configuration: configuration, ctidKey: key)
    }

    public func setAccessToken(_ token: String) { transport.setAccessToken(token) }

    /// `POST /v1/ctid/serial-numbers`.
    public func getBizSerialNumber(authMode: CTIDAuthMode) async throws(FaceGateError) -> CTIDSerialNumber {
        try await getBizSerialNumber(authModeCode: authMode.wire)
    }

    /// `POST /v1/ctid/serial-numbers` with a mode as the original SDK wrote it (`"0x42"`), including modes this
    /// platform refuses (those that need the national network credential answer `INVALID_REQUEST`).
    public func getBizSerialNumber(authModeCode: String) async throws(FaceGateError) -> CTIDSerialNumber {
        struct Body: Encodable { var authMode: String }
        var serial = try await transport.send("POST", "/v1/ctid/serial-numbers", body: .json(Body(authMode: authModeCode)))
            .decode(CTIDSerialNumber.self)
        serial.authMode = authModeCode
        return serial
    }

    /// `POST /v1/ctid/verifications`: seals `identity` with `serial`, sends it, verifies and opens the answer.
    public func validateIdentity(_ identity: CTIDIdentity, serial: CTIDSerialNumber) async throws(FaceGateError) -> CTIDVerificationResult {
        let plaintext = CTIDVerificationRequest(bizSerialNum: serial.bizSerialNum, randNum: serial.randNum, idNumber: identity.idNumber,
                                                authMode: serial.authMode, name: identity.name, validDateStart: identity.validDateStart,
                                                validDateEnd: identity.validDateEnd, photoData: identity.photo)
        let encoded: Data
        do { encoded = try JSONEncoder().encode(plaintext) } catch { throw .usage("the identity could not be encoded") }
        let envelope = try cipher.seal(Array(encoded))
        let answer = try await transport.send("POST", "/v1/ctid/verifications", body: .json(envelope))
        let opened = try cipher.open(try answer.decode(CTIDEnvelope.self))
        do {
            return try JSONDecoder().decode(CTIDVerificationResult.self, from: Data(opened))
        } catch {
            throw .decoding("the opened answer is not a verification result")
        }
    }

    /// Serial number and verification in one call.
    public func validateIdentity(_ identity: CTIDIdentity, authMode: CTIDAuthMode) async throws(FaceGateError) -> CTIDVerificationResult {
        try await validateIdentity(identity, serial: try await getBizSerialNumber(authMode: authMode))
    }
}
