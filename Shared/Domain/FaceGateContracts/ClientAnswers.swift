import Foundation

// The HTTP answers the SDKs read, declared once: the gateway encodes these types and FaceGateClient decodes them.

/// A successful login by any method (face login, its confirmation, a device-credential assertion): the identity token
/// the app hands to its own server, which exchanges it once at `POST /v1/identity/exchange`. On the wire with
/// `"status": "SUCCESS"`.
public struct FaceGateIdentity: Codable, Sendable, Equatable {
    public var identityToken: String
    /// Seconds the identity token stays valid.
    public var expiresIn: Int
    public var transactionId: String
    public var userId: String

    public init(identityToken: String, expiresIn: Int, transactionId: String, userId: String) {
        self.identityToken = identityToken
        self.expiresIn = expiresIn
        self.transactionId = transactionId
        self.userId = userId
    }

    private enum Keys: String, CodingKey { case status, identityToken, expiresIn, transactionId, userId }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(identityToken: try container.decode(String.self, forKey: .identityToken), expiresIn: try container.decode(Int.self, forKey: .expiresIn),
                  transactionId: try container.decode(String.self, forKey: .transactionId), userId: try container.decode(String.self, forKey: .userId))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(FaceLoginOutcome.successStatus, forKey: .status)
        try container.encode(identityToken, forKey: .identityToken)
        try container.encode(expiresIn, forKey: .expiresIn)
        try container.encode(transactionId, forKey: .transactionId)
        try container.encode(userId, forKey: .userId)
    }
}

/// A face that matched on a new device, waiting for the employee number. On the wire with
/// `"status": "CONFIRM_REQUIRED"`.
public struct FaceLoginConfirmation: Codable, Sendable, Equatable {
    public var confirmationId: String
    public var transactionId: String
    /// Seconds the confirmation stays usable, when the server says.
    public var expiresIn: Int?

    public init(confirmationId: String, transactionId: String, expiresIn: Int?) {
        self.confirmationId = confirmationId
        self.transactionId = transactionId
        self.expiresIn = expiresIn
    }

    private enum Keys: String, CodingKey { case status, confirmationId, transactionId, expiresIn }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(confirmationId: try container.decode(String.self, forKey: .confirmationId),
                  transactionId: try container.decode(String.self, forKey: .transactionId),
                  expiresIn: try container.decodeIfPresent(Int.self, forKey: .expiresIn))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(FaceLoginOutcome.confirmationStatus, forKey: .status)
        try container.encode(confirmationId, forKey: .confirmationId)
        try container.encode(transactionId, forKey: .transactionId)
        try container.encodeIfPresent(expiresIn, forKey: .expiresIn)
    }
}

/// The answer to a face (`POST /v1/face-login`): logged in, or the face matched on a device not yet bound to the
/// person. Told apart on the wire by `status`.
public enum FaceLoginOutcome: Codable, Sendable, Equatable {
    case success(FaceGateIdentity)
    /// Ask the person for their employee number and call `confirm(employeeNumber:)`.
    case confirmationRequired(FaceLoginConfirmation)

    /// The `status` of each.
    public static let successStatus = "SUCCESS", confirmationStatus = "CONFIRM_REQUIRED"

    private enum Keys: String, CodingKey { case status }

    public init(from decoder: any Decoder) throws {
        let status = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .status)
        switch status {
        case Self.successStatus: self = .success(try FaceGateIdentity(from: decoder))
        case Self.confirmationStatus: self = .confirmationRequired(try FaceLoginConfirmation(from: decoder))
        default:
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [Keys.status], debugDescription: "unknown face-login status \(status)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .success(let identity): try identity.encode(to: encoder)
        case .confirmationRequired(let confirmation): try confirmation.encode(to: encoder)
        }
    }
}

/// `GET /v1/liveness/challenges`: single use, valid `expiresIn` seconds. A challenge naming an action this version does
/// not know does not decode: it could not be performed.
public struct LivenessChallenge: Codable, Sendable, Equatable {
    public var challengeId: String
    public var actions: [LivenessAction]
    public var expiresIn: Int

    public init(challengeId: String, actions: [LivenessAction], expiresIn: Int) {
        self.challengeId = challengeId
        self.actions = actions
        self.expiresIn = expiresIn
    }
}

/// `POST /v1/ctid/serial-numbers`: a single-use serial number and challenge code for one verification.
public struct CTIDSerialNumber: Codable, Sendable, Equatable {
    public var bizSerialNum: String
    public var randNum: String
    public var expiresIn: Int
    /// The mode it was asked for, sent back in the request object as the original SDK does (set by the client; the
    /// server does not send it).
    public var authMode: String?

    public init(bizSerialNum: String, randNum: String, expiresIn: Int, authMode: String? = nil) {
        self.bizSerialNum = bizSerialNum
        self.randNum = randNum
        self.expiresIn = expiresIn
        self.authMode = authMode
    }
}

/// `POST /v1/kiosk/sessions`: the session and its interview token (`X-Interview-Token` on every later call).
public struct KioskSessionCreated: Codable, Sendable, Equatable {
    public var interviewId: String
    public var interviewToken: String
    public var expiresIn: Int?

    public init(interviewId: String, interviewToken: String, expiresIn: Int?) {
        self.interviewId = interviewId
        self.interviewToken = interviewToken
        self.expiresIn = expiresIn
    }
}
