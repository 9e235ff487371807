import Foundation

/// Jobs on `ctid.jobs.v1`, answered by the ctid-verifier on the requester's reply partition. The
/// gateway forwards ciphertext only: it never holds an institution key or the sealing key.
public enum CTIDJobKind: String, Codable, Sendable, CaseIterable {
    /// An encrypted verification envelope from a client app.
    case verify
    /// An operator's registry entry, to be sealed and stored (with a portrait template when a photo is given).
    case register

    public var messageType: String { "ctid.\(rawValue)" }
}

/// A CTID job: one payload per kind. On the wire one flat object (`kind`, `appId`, and the kind's fields).
public struct CTIDJob: Codable, Sendable {
    public enum Payload: Sendable, Equatable {
        /// A client's envelope (nil when the body was not even an envelope: still the verifier's to judge and record),
        /// with the device and address that sent it.
        case verify(envelope: CTIDEnvelope?, deviceId: String?, clientIp: String?)
        case register(CTIDRegistration)
    }

    /// The app the caller authenticated as (access token or operator path), not the envelope's claim.
    public var appId: UUID
    public var payload: Payload

    public init(appId: UUID, _ payload: Payload) {
        self.appId = appId
        self.payload = payload
    }

    public var kind: CTIDJobKind {
        switch payload {
        case .verify: .verify
        case .register: .register
        }
    }

    private enum Keys: String, CodingKey { case kind, appId, envelope, registration, deviceId, clientIp }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        appId = try container.decode(UUID.self, forKey: .appId)
        switch try container.decode(CTIDJobKind.self, forKey: .kind) {
        case .verify:
            payload = .verify(envelope: try container.decodeIfPresent(CTIDEnvelope.self, forKey: .envelope),
                              deviceId: try container.decodeIfPresent(String.self, forKey: .deviceId),
                              clientIp: try container.decodeIfPresent(String.self, forKey: .clientIp))
        case .register:
            payload = .register(try container.decode(CTIDRegistration.self, forKey: .registration))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(appId, forKey: .appId)
        switch payload {
        case .verify(let envelope, let deviceId, let clientIp):
            try container.encodeIfPresent(envelope, forKey: .envelope)
            try container.encodeIfPresent(deviceId, forKey: .deviceId)
            try container.encodeIfPresent(clientIp, forKey: .clientIp)
        case .register(let registration):
            try container.encode(registration, forKey: .registration)
        }
    }
}

/// `POST /v1/apps/{appId}/ctid-registry` body: a trusted identity record of the app.
public struct CTIDRegistration: Codable, Sendable, Equatable {
    public var number: String
    public var name: String
    public var validDateStart: String
    /// `YYYYMMDD` or `长期` (long-term).
    public var validDateEnd: String
    /// base64 JPEG/PNG portrait.
    public var photoData: Data?

    public init(number: String, name: String, validDateStart: String, validDateEnd: String, photoData: Data? = nil) {
        self.number = number
        self.name = name
        self.validDateStart = validDateStart
        self.validDateEnd = validDateEnd
        self.photoData = photoData
    }
}

public struct CTIDJobResult: Codable, Sendable {
    public enum Outcome: String, Codable, Sendable {
        /// `envelope` carries the verifier's sealed answer.
        case answered = "ANSWERED"
        /// Any envelope fault; the gateway answers 400 `INVALID_ENVELOPE` with its one fixed body.
        case invalidEnvelope = "INVALID_ENVELOPE"
        case registered = "REGISTERED"
        case invalidRequest = "INVALID_REQUEST"
        case notFound = "NOT_FOUND"
        /// The portrait could not be used (no face, bad image, low quality).
        case imageRejected = "IMAGE_REJECTED"
        case unavailable = "SERVICE_UNAVAILABLE"
    }

    /// How an answered verification counts for the attempt limits: `success` (verified), `failure` (the identity, the
    /// portrait or the serial did not hold), `neutral` (the request could not be judged). The client sees none of this:
    /// only the sealed envelope.
    public enum Attempt: String, Codable, Sendable { case success, failure, neutral }

    public var outcome: Outcome
    public var envelope: CTIDEnvelope?
    public var message: String?
    public var transactionId: UUID?
    public var attempt: Attempt?
    /// An opaque key of the registry entry the request claimed (a keyed hash of its number, not the registry's own), so
    /// that the gateway can limit the tries at one identity without ever seeing it.
    public var registryEntry: String?

    public init(outcome: Outcome, envelope: CTIDEnvelope? = nil, message: String? = nil, transactionId: UUID? = nil,
                attempt: Attempt? = nil, registryEntry: String? = nil) {
        self.outcome = outcome
        self.envelope = envelope
        self.message = message
        self.transactionId = transactionId
        self.attempt = attempt
        self.registryEntry = registryEntry
    }
}

/// The plaintext of a client's verification envelope: the original SDK's request object (`bizSerialNum`,
/// `authMode`, `photoData`, `name`, `number`, `validDateStart`, `validDateEnd`) plus `randNum`.
/// `idNumber` is accepted for `number`.
public struct CTIDVerificationRequest: Codable, Sendable {
    public var bizSerialNum: String
    public var randNum: String
    /// The resident ID number (`number` on the wire).
    public var idNumber: String
    /// The mode the serial was asked for (`0x42` …); when sent, it must be the serial's.
    public var authMode: String?
    public var name: String
    /// Modes 0x10, 0x12: `YYYYMMDD`.
    public var validDateStart: String?
    /// Modes 0x10, 0x12: `YYYYMMDD` or `长期`.
    public var validDateEnd: String?
    /// Portrait modes: base64 JPEG/PNG.
    public var photoData: Data?

    public init(bizSerialNum: String, randNum: String, idNumber: String, authMode: String? = nil, name: String, validDateStart: String? = nil,
                validDateEnd: String? = nil, photoData: Data? = nil) {
        self.bizSerialNum = bizSerialNum
        self.randNum = randNum
        self.idNumber = idNumber
        self.authMode = authMode
        self.name = name
        self.validDateStart = validDateStart
        self.validDateEnd = validDateEnd
        self.photoData = photoData
    }

    enum CodingKeys: String, CodingKey { case bizSerialNum, randNum, number, idNumber, authMode, name, validDateStart, validDateEnd, photoData }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bizSerialNum = try c.decode(String.self, forKey: .bizSerialNum)
        randNum = try c.decode(String.self, forKey: .randNum)
        guard let number = try c.decodeIfPresent(String.self, forKey: .number) ?? c.decodeIfPresent(String.self, forKey: .idNumber) else {
            throw DecodingError.keyNotFound(CodingKeys.number, .init(codingPath: c.codingPath, debugDescription: "number is required"))
        }
        idNumber = number
        authMode = try c.decodeIfPresent(String.self, forKey: .authMode)
        name = try c.decode(String.self, forKey: .name)
        validDateStart = try c.decodeIfPresent(String.self, forKey: .validDateStart)
        validDateEnd = try c.decodeIfPresent(String.self, forKey: .validDateEnd)
        photoData = try c.decodeIfPresent(Data.self, forKey: .photoData)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bizSerialNum, forKey: .bizSerialNum)
        try c.encode(randNum, forKey: .randNum)
        try c.encode(idNumber, forKey: .number)
        try c.encodeIfPresent(authMode, forKey: .authMode)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(validDateStart, forKey: .validDateStart)
        try c.encodeIfPresent(validDateEnd, forKey: .validDateEnd)
        try c.encodeIfPresent(photoData, forKey: .photoData)
    }

    /// The field a decoding error is about (`number`, `photoData` …), empty when the plaintext is not a JSON object.
    public static func field(of error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _): key.stringValue
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            context.codingPath.map(\.stringValue).joined(separator: ".")
        default: ""
        }
    }
}

/// The plaintext of the verifier's answer envelope.
public struct CTIDVerificationAnswer: Codable, Sendable, Equatable {
    public var bizSerialNum: String
    /// `""` when every checked element passed; else 4 characters: identity (`0` valid, `5` invalid or
    /// mismatch), portrait (`0` same, `1` different, `2` suspected, `D` none on file, `X` not checked), then `XX`.
    public var authResult: String
    public var resultCode: String
    public var message: String
    public var transactionId: String

    public init(bizSerialNum: String, authResult: String, resultCode: String, message: String, transactionId: String) {
        self.bizSerialNum = bizSerialNum
        self.authResult = authResult
        self.resultCode = resultCode
        self.message = message
        self.transactionId = transactionId
    }

    /// Every checked element passed (`resultCode` "0" and no failing element).
    public var isVerified: Bool { resultCode == "0" && authResult.isEmpty }
}

/// CTID authentication modes this platform answers without the national network credential.
public enum CTIDAuthMode: Int, Sendable, CaseIterable {
    case nameNumber = 0x40
    case portraitNameNumber = 0x42
    case nameNumberValidity = 0x10
    case portraitNameNumberValidity = 0x12

    /// `"0x42"` (case-insensitive hex with the 0x prefix).
    public init?(wire: String) {
        let lower = wire.lowercased()
        guard lower.hasPrefix("0x"), let value = Int(lower.dropFirst(2), radix: 16) else { return nil }
        self.init(rawValue: value)
    }

    /// A syntactically valid mode code (`0x00`–`0xff`), supported or not.
    public static func isModeCode(_ wire: String) -> Bool {
        let lower = wire.lowercased()
        return lower.hasPrefix("0x") && lower.count == 4 && Int(lower.dropFirst(2), radix: 16) != nil
    }

    public var wire: String { String(format: "0x%02x", rawValue) }
    public var checksPortrait: Bool { self == .portraitNameNumber || self == .portraitNameNumberValidity }
    public var checksValidity: Bool { self == .nameNumberValidity || self == .portraitNameNumberValidity }
}

/// `resultCode` values of the answer.
public enum CTIDResultCode: String, Sendable {
    case verified = "0"
    case mismatch = "1"
    case serialInvalid = "2"
    case invalidData = "3"
    case unsupportedMode = "4"
    case portraitUnusable = "5"
    /// Face matching did not answer in time; ask for a new serial and try again.
    case unavailable = "9"
}
