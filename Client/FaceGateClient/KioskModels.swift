import FaceGateContracts
import Foundation

// The wire types are FaceGateContracts' (the services use the same ones): `LivenessAction`, `KioskEventName`,
// `KioskDocumentSummary`. The types here are the SDK's typed views of them, one per event as the kiosk SDK's callbacks
// know them.

/// `POST /v1/kiosk/login`. On failure `success` is false and `error` holds the wire code;
/// `spoofAttempt` is true when liveness failed or the challenge was unknown, expired or reused.
public struct KioskLoginResult: Sendable, Equatable, Decodable {
    public var success: Bool
    public var customerUUID: String?
    /// An identity token (method `kiosk`) for the app server's `/v1/identity/exchange`.
    public var token: String?
    public var interviewId: String?
    public var interviewToken: String?
    public var transactionId: String?
    public var spoofAttempt: Bool
    public var firstName: String?
    public var error: String?

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        success = try c.decode(Bool.self, forKey: .success)
        customerUUID = try c.decodeIfPresent(String.self, forKey: .customerUUID)
        token = try c.decodeIfPresent(String.self, forKey: .token)
        interviewId = try c.decodeIfPresent(String.self, forKey: .interviewId)
        interviewToken = try c.decodeIfPresent(String.self, forKey: .interviewToken)
        transactionId = try c.decodeIfPresent(String.self, forKey: .transactionId)
        spoofAttempt = try c.decodeIfPresent(Bool.self, forKey: .spoofAttempt) ?? false
        firstName = try c.decodeIfPresent(String.self, forKey: .firstName)
        error = try c.decodeIfPresent(KioskStepError.self, forKey: .error)?.code
    }

    enum CodingKeys: String, CodingKey {
        case success, customerUUID, token, interviewId, interviewToken, transactionId, spoofAttempt, firstName, error
    }
}

/// A step's failure as an event carries it: a wire code (`NO_PORTRAIT`, `DOCUMENT_UNREADABLE`, ...) and
/// a message when the server gave one. Read from either a bare code string or `{code, message}`.
public struct KioskStepError: Sendable, Equatable, Decodable {
    public var code: String
    public var message: String?

    public init(code: String, message: String? = nil) {
        self.code = code
        self.message = message
    }

    public init(from decoder: any Decoder) throws {
        if let code = try? decoder.singleValueContainer().decode(String.self) {
            self.init(code: code)
            return
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(code: try c.decode(String.self, forKey: .code), message: try c.decodeIfPresent(String.self, forKey: .message))
    }

    enum CodingKeys: String, CodingKey { case code, message }
}

public struct SelfieScanCompleted: Sendable, Equatable, Decodable {
    public var success: Bool
    public var existingUser: Bool?
    public var spoofAttempt: Bool?
    public var error: KioskStepError?
    /// Why the step failed, in words, when the server says.
    public var message: String?
}

/// `idFrontCompleted` and `idBackCompleted`.
public struct KioskDocumentStep: Sendable, Equatable, Decodable {
    public var success: Bool
    public var error: KioskStepError?
    /// Why the step failed, in words, when the server says.
    public var message: String?
}

public struct IdProcessed: Sendable, Equatable, Decodable {
    public var success: Bool
    /// What the screen may show of the read document (no document number or birth date: those stay in the session).
    public var ocrData: KioskDocumentSummary?
    public var error: KioskStepError?
    /// Why the step failed, in words, when the server says.
    public var message: String?
}

public struct FaceMatchCompleted: Sendable, Equatable, Decodable {
    public var success: Bool
    public var distance: Double?
    public var error: KioskStepError?
    /// Why the step failed, in words, when the server says.
    public var message: String?
}

public struct KioskFlowCompleted: Sendable, Equatable, Decodable {
    public var success: Bool
    public var customerUUID: String?
    /// An identity token (method `kiosk`) for the app server: not in the event itself, read by the client
    /// from the finished session before the delegate hears of it.
    public var token: String?
    public var name: String?
    public var existingUser: Bool?
}

public struct KioskErrorEvent: Sendable, Equatable, Decodable {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// One event of a kiosk session, from its event stream or a step call's answer.
public enum KioskEvent: Sendable, Equatable {
    case selfieScanCompleted(SelfieScanCompleted)
    case idFrontCompleted(KioskDocumentStep)
    case idBackCompleted(KioskDocumentStep)
    case idProcessed(IdProcessed)
    case faceMatchCompleted(FaceMatchCompleted)
    case kioskFlowCompleted(KioskFlowCompleted)
    case kioskError(KioskErrorEvent)
    case userCancelledSession
    /// An event name this version does not know, with its raw JSON data.
    case unknown(name: String, data: String)

    public var name: String {
        switch self {
        case .selfieScanCompleted: KioskEventName.selfieScanCompleted.rawValue
        case .idFrontCompleted: KioskEventName.idFrontCompleted.rawValue
        case .idBackCompleted: KioskEventName.idBackCompleted.rawValue
        case .idProcessed: KioskEventName.idProcessed.rawValue
        case .faceMatchCompleted: KioskEventName.faceMatchCompleted.rawValue
        case .kioskFlowCompleted: KioskEventName.kioskFlowCompleted.rawValue
        case .kioskError: KioskEventName.kioskError.rawValue
        case .userCancelledSession: KioskEventName.userCancelledSession.rawValue
        case .unknown(let name, _): name
        }
    }

    /// Reads the event `name` from its JSON `data`.
    public init(name: String, data: Data) throws(FaceGateError) {
        func decode<T: Decodable>(_ type: T.Type) throws(FaceGateError) -> T {
            do { return try JSONDecoder().decode(type, from: data) } catch {
                throw .decoding("kiosk event \(name) has unreadable data: \(error)")
            }
        }
        switch KioskEventName(rawValue: name) {
        case .selfieScanCompleted: self = .selfieScanCompleted(try decode(SelfieScanCompleted.self))
        case .idFrontCompleted: self = .idFrontCompleted(try decode(KioskDocumentStep.self))
        case .idBackCompleted: self = .idBackCompleted(try decode(KioskDocumentStep.self))
        case .idProcessed: self = .idProcessed(try decode(IdProcessed.self))
        case .faceMatchCompleted: self = .faceMatchCompleted(try decode(FaceMatchCompleted.self))
        case .kioskFlowCompleted: self = .kioskFlowCompleted(try decode(KioskFlowCompleted.self))
        case .kioskError: self = .kioskError(try decode(KioskErrorEvent.self))
        case .userCancelledSession: self = .userCancelledSession
        case nil: self = .unknown(name: name, data: String(decoding: data, as: UTF8.self))
        }
    }
}

public struct KioskStepRecord: Sendable, Equatable, Decodable {
    public var name: String
    public var success: Bool
    public var at: String?
}

public struct KioskFlowResult: Sendable, Equatable, Decodable {
    public var success: Bool
    public var customerUUID: String?
    public var token: String?
    public var name: String?
    public var existingUser: Bool?
}

/// `GET /v1/kiosk/sessions/{interviewId}`. States: `selfie`, `idFront`, `idBack`, `completed`, `failed`, `cancelled`, `expired`.
public struct KioskSessionStatus: Sendable, Equatable, Decodable {
    public var interviewId: String
    public var state: String
    public var steps: [KioskStepRecord]
    public var result: KioskFlowResult?
    public var expiresAt: String?

    public static let terminalStates: Set<String> = ["completed", "failed", "cancelled", "expired"]
    public var isTerminal: Bool { Self.terminalStates.contains(state) }
}

/// The answer of a step call: the session after the step and the events the step produced.
public struct KioskStepResult: Sendable, Equatable {
    public var interviewId: String
    public var state: String
    public var steps: [KioskStepRecord]
    public var result: KioskFlowResult?
    public var events: [KioskEvent]

    static func decode(_ answer: HTTPAnswer) throws(FaceGateError) -> KioskStepResult {
        struct Shape: Decodable {
            var interviewId: String
            var state: String
            var steps: [KioskStepRecord]?
            var result: KioskFlowResult?
        }
        let shape = try answer.decode(Shape.self)
        var events: [KioskEvent] = []
        let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any]
        for item in object?["events"] as? [[String: Any]] ?? [] {
            guard let name = item["event"] as? String else { continue }
            // The stream's data object, either flattened next to `event` or nested as `data` (with `seq`, `at`).
            var data = item
            if let nested = item["data"] as? [String: Any] {
                data = nested
            } else {
                data.removeValue(forKey: "event")
            }
            guard let bytes = try? JSONSerialization.data(withJSONObject: data) else { continue }
            events.append(try KioskEvent(name: name, data: bytes))
        }
        return KioskStepResult(interviewId: shape.interviewId, state: shape.state, steps: shape.steps ?? [], result: shape.result, events: events)
    }
}
