import FaceGateContracts
import Foundation

/// A CTID authentication mode, as the wire writes it (`"0x42"`).
public struct CTIDAuthMode: RawRepresentable, Sendable, Hashable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Name + ID number.
    public static let nameNumber = CTIDAuthMode(rawValue: "0x40")
    /// Portrait + name + ID number.
    public static let portraitNameNumber = CTIDAuthMode(rawValue: "0x42")
    /// Name + ID number + validity dates.
    public static let nameNumberValidity = CTIDAuthMode(rawValue: "0x10")
    /// Portrait + name + ID number + validity dates.
    public static let portraitNameNumberValidity = CTIDAuthMode(rawValue: "0x12")
}

/// A single-use serial number and challenge code for one verification.
public struct CTIDSerialNumber: Sendable, Equatable, Decodable {
    public var bizSerialNum: String
    public var randNum: String
    public var expiresIn: Int
    /// The mode it was asked for, sent back in the request object as the original SDK does.
    public var authMode: String?
}

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
        struct Body: Encodable { var authMode: String }
        var serial = try await transport.send("POST", "/v1/ctid/serial-numbers", body: .json(Body(authMode: authMode.rawValue)))
            .decode(CTIDSerialNumber.self)
        serial.authMode = authMode.rawValue
        return serial
    }

    /// `POST /v1/ctid/verifications`: seals `identity` with `serial`, sends it, verifies and opens the answer.
    public func validateIdentity(_ identity: CTIDIdentity, serial: CTIDSerialNumber) async throws(FaceGateError) -> CTIDVerificationResult {
        // The original SDK's request object, field for field, plus randNum.
        struct Plaintext: Encodable {
            var bizSerialNum: String
            var randNum: String
            var authMode: String?
            var number: String
            var name: String
            var validDateStart: String?
            var validDateEnd: String?
            var photoData: String?
        }
        let plaintext = Plaintext(bizSerialNum: serial.bizSerialNum, randNum: serial.randNum, authMode: serial.authMode, number: identity.idNumber,
                                  name: identity.name, validDateStart: identity.validDateStart, validDateEnd: identity.validDateEnd,
                                  photoData: identity.photo?.base64EncodedString())
        let encoded: Data
        do { encoded = try JSONEncoder().encode(plaintext) } catch { throw .usage("the identity could not be encoded") }
        let envelope = try cipher.seal(Array(encoded))
        let answer = try await transport.send("POST", "/v1/ctid/verifications", body: .json(envelope))
        let opened = try cipher.open(try answer.decode(CTIDEnvelopeCipher.Envelope.self))
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
