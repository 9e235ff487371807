import Foundation

/// Where a kiosk onboarding session stands. A client drives `selfie`, `idFront` and `idBack`; `faceMatch`
/// and `approval` are the orchestrator's own stages after the back of the document was read (persisted,
/// so a restarted orchestrator resumes there); the last four are final.
public enum KioskState: String, Codable, Sendable, CaseIterable {
    case selfie, idFront, idBack, faceMatch, approval, completed, failed, cancelled, expired

    public var isFinal: Bool { [.completed, .failed, .cancelled, .expired].contains(self) }

    /// Position in the flow, for telling a repeated step from one out of order.
    public var order: Int { Self.allCases.firstIndex(of: self)! }
}

/// A command on `kiosk.commands.v1`, keyed by session id so one session's commands stay in order.
public struct KioskCommand: Codable, Sendable {
    public enum Step: String, Codable, Sendable {
        case create, selfie, idFront, idBack, cancel

        /// The state a session must be in for this step to do work.
        public var state: KioskState? {
            switch self {
            case .selfie: .selfie
            case .idFront: .idFront
            case .idBack: .idBack
            case .create, .cancel: nil
            }
        }
    }

    /// What each step carries.
    public enum Payload: Sendable, Equatable {
        /// SHA-256 of the interview token.
        case create(tokenHash: Data)
        /// The burst, and the actions of the consumed challenge (nil when the app's kiosk liveness is off).
        case selfie(frames: [Data], actions: [LivenessAction]?)
        /// The photo of the document's front.
        case idFront(image: Data)
        /// The photo of the document's back.
        case idBack(image: Data)
        case cancel
    }

    public var commandId: UUID
    public var sessionId: UUID
    public var appId: UUID
    public var deviceId: String?
    /// The registered kiosk that sent the command (its key's thumbprint is `deviceId`); a session remembers the one that
    /// created it.
    public var kioskId: UUID?
    public var clientIp: String?
    public var payload: Payload

    public init(commandId: UUID = UUID(), sessionId: UUID, appId: UUID, deviceId: String? = nil, kioskId: UUID? = nil, clientIp: String? = nil,
                _ payload: Payload) {
        self.commandId = commandId
        self.sessionId = sessionId
        self.appId = appId
        self.deviceId = deviceId
        self.kioskId = kioskId
        self.clientIp = clientIp
        self.payload = payload
    }

    public var step: Step {
        switch payload {
        case .create: .create
        case .selfie: .selfie
        case .idFront: .idFront
        case .idBack: .idBack
        case .cancel: .cancel
        }
    }

    // On the wire one flat object: `step` and the step's fields (`tokenHash`, `frames` and `actions`, `image`).
    private enum Keys: String, CodingKey { case commandId, sessionId, appId, deviceId, kioskId, clientIp, step, frames, actions, image, tokenHash }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        commandId = try container.decode(UUID.self, forKey: .commandId)
        sessionId = try container.decode(UUID.self, forKey: .sessionId)
        appId = try container.decode(UUID.self, forKey: .appId)
        deviceId = try container.decodeIfPresent(String.self, forKey: .deviceId)
        kioskId = try container.decodeIfPresent(UUID.self, forKey: .kioskId)
        clientIp = try container.decodeIfPresent(String.self, forKey: .clientIp)
        payload = switch try container.decode(Step.self, forKey: .step) {
        case .create: .create(tokenHash: try container.decode(Data.self, forKey: .tokenHash))
        case .selfie: .selfie(frames: try container.decode([Data].self, forKey: .frames),
                              actions: try container.decodeIfPresent([LivenessAction].self, forKey: .actions))
        case .idFront: .idFront(image: try container.decode(Data.self, forKey: .image))
        case .idBack: .idBack(image: try container.decode(Data.self, forKey: .image))
        case .cancel: .cancel
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(commandId, forKey: .commandId)
        try container.encode(sessionId, forKey: .sessionId)
        try container.encode(appId, forKey: .appId)
        try container.encodeIfPresent(deviceId, forKey: .deviceId)
        try container.encodeIfPresent(kioskId, forKey: .kioskId)
        try container.encodeIfPresent(clientIp, forKey: .clientIp)
        try container.encode(step, forKey: .step)
        switch payload {
        case .create(let tokenHash): try container.encode(tokenHash, forKey: .tokenHash)
        case .selfie(let frames, let actions):
            try container.encode(frames, forKey: .frames)
            try container.encodeIfPresent(actions, forKey: .actions)
        case .idFront(let image), .idBack(let image): try container.encode(image, forKey: .image)
        case .cancel: break
        }
    }
}

/// Step event names, as the kiosk SDK's callbacks know them (`on` + capitalised name).
public enum KioskEventName: String, Codable, Sendable, CaseIterable {
    case selfieScanCompleted, idFrontCompleted, idBackCompleted, idProcessed, faceMatchCompleted
    case kioskFlowCompleted, kioskError, userCancelledSession

    /// The step a successful or failed event reports, as listed in a session's `steps`.
    public var stepName: String? {
        switch self {
        case .selfieScanCompleted: "selfie"
        case .idFrontCompleted: "idFront"
        case .idBackCompleted: "idBack"
        case .idProcessed: "idProcessed"
        case .faceMatchCompleted: "faceMatch"
        case .kioskFlowCompleted: "approval"
        case .kioskError, .userCancelledSession: nil
        }
    }
}

/// The fields read from the document's machine-readable zone (dates `YYYY-MM-DD`).
public struct KioskOCRData: Codable, Sendable, Equatable {
    public var documentType: String
    public var issuingState: String
    public var documentNumber: String
    public var surname: String
    public var givenNames: String
    public var nationality: String
    public var birthDate: String
    public var sex: String
    public var expiryDate: String

    public init(documentType: String, issuingState: String, documentNumber: String, surname: String, givenNames: String,
                nationality: String, birthDate: String, sex: String, expiryDate: String) {
        self.documentType = documentType
        self.issuingState = issuingState
        self.documentNumber = documentNumber
        self.surname = surname
        self.givenNames = givenNames
        self.nationality = nationality
        self.birthDate = birthDate
        self.sex = sex
        self.expiryDate = expiryDate
    }

    /// "Given Surname", capitalised word by word from the MRZ's upper case.
    public var displayName: String {
        (givenNames.split(separator: " ") + surname.split(separator: " "))
            .map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined(separator: " ")
    }
}

/// What a kiosk screen shows of a read document: the document number and the birth date stay in the
/// session (for the approval and the new customer) and never travel in an event.
public struct KioskDocumentSummary: Codable, Sendable, Equatable {
    public var documentType: String
    public var issuingState: String
    public var surname: String
    public var givenNames: String
    public var nationality: String
    public var sex: String
    public var expiryDate: String

    public init(_ document: KioskOCRData) {
        documentType = document.documentType
        issuingState = document.issuingState
        surname = document.surname
        givenNames = document.givenNames
        nationality = document.nationality
        sex = document.sex
        expiryDate = document.expiryDate
    }
}

/// The data of one step event; absent fields are left out of the JSON. Events are what a kiosk screen
/// needs: no document number, birth date or identity token (the token is read once from the session).
public struct KioskEventData: Codable, Sendable, Equatable {
    public var success: Bool?
    public var existingUser: Bool?
    public var spoofAttempt: Bool?
    public var error: String?
    public var message: String?
    public var ocrData: KioskDocumentSummary?
    public var distance: Float?
    public var customerUUID: String?
    public var name: String?
    /// `kioskError`: the error code.
    public var code: String?

    public init(success: Bool? = nil, existingUser: Bool? = nil, spoofAttempt: Bool? = nil, error: ErrorCode? = nil,
                message: String? = nil, ocrData: KioskOCRData? = nil, distance: Float? = nil, customerUUID: UUID? = nil,
                name: String? = nil, code: ErrorCode? = nil) {
        self.success = success
        self.existingUser = existingUser
        self.spoofAttempt = spoofAttempt
        self.error = error?.rawValue
        self.message = message
        self.ocrData = ocrData.map(KioskDocumentSummary.init)
        self.distance = distance
        self.customerUUID = customerUUID?.wire
        self.name = name
        self.code = code?.rawValue
    }
}

/// One stored step event; `seq` is the Server-Sent Events id.
public struct KioskEvent: Codable, Sendable, Equatable {
    public var seq: Int
    public var event: KioskEventName
    public var data: KioskEventData
    public var at: Date

    /// The event as `kiosk.events.v1` carries it, for consumers outside the kiosk: no name and no document summary
    /// (those reach the kiosk only through its session's event stream, and are erased with the session).
    public var withoutPersonalData: KioskEvent {
        var event = self
        event.data.ocrData = nil
        event.data.name = nil
        return event
    }

    public init(seq: Int, event: KioskEventName, data: KioskEventData, at: Date) {
        self.seq = seq
        self.event = event
        self.data = data
        self.at = at
    }

    /// Ends an event stream: nothing can follow it.
    public var isFinal: Bool {
        switch event {
        case .kioskFlowCompleted, .userCancelledSession: true
        case .kioskError: data.code == ErrorCode.sessionExpired.rawValue || data.code == ErrorCode.tooManyAttempts.rawValue
        default: false
        }
    }
}

/// The outcome of a finished flow.
public struct KioskResult: Codable, Sendable, Equatable {
    public var success: Bool
    public var customerUUID: String?
    public var token: String?
    public var name: String?
    public var existingUser: Bool

    public init(success: Bool, customerUUID: UUID?, token: String?, name: String?, existingUser: Bool) {
        self.success = success
        self.customerUUID = customerUUID?.wire
        self.token = token
        self.name = name
        self.existingUser = existingUser
    }
}

/// What `GET /v1/kiosk/sessions/{id}` and every step call answer.
public struct KioskSessionView: Codable, Sendable {
    public struct Step: Codable, Sendable, Equatable {
        public var name: String
        public var success: Bool
        public var at: Date
        public init(name: String, success: Bool, at: Date) {
            self.name = name
            self.success = success
            self.at = at
        }
    }

    public var interviewId: String
    public var state: KioskState
    public var steps: [Step]
    public var result: KioskResult?
    public var expiresAt: Date
    /// Step calls: the events this call produced.
    public var events: [KioskEvent]?

    public init(interviewId: UUID, state: KioskState, steps: [Step], result: KioskResult?, expiresAt: Date, events: [KioskEvent]? = nil) {
        self.interviewId = interviewId.wire
        self.state = state
        self.steps = steps
        self.result = result
        self.expiresAt = expiresAt
        self.events = events
    }
}

/// The orchestrator's answer to a command: the session after it, or why the command was refused.
public struct KioskCommandReply: Codable, Sendable {
    public var session: KioskSessionView?
    public var error: ErrorCode?
    public var message: String?

    public init(session: KioskSessionView) {
        self.session = session
    }

    public init(error: ErrorCode, message: String) {
        self.error = error
        self.message = message
    }
}

/// An app's rules for approving a new kiosk customer, beyond the fixed ones (the selfie passed the
/// app's liveness policy, the document's check digits held, it has not expired, it carries a name).
/// Every field is optional; absent means "no extra rule".
public struct KioskApprovalPolicy: Codable, Sendable, Equatable {
    /// Largest selfie-to-portrait distance accepted; the app's `matchThreshold` when absent.
    public var faceMatchThreshold: Float?
    /// Youngest age, in whole years on the day of approval.
    public var minimumAge: Int?
    /// Accepted document types by their first letter: `P` passports, `I`, `A`, `C` identity cards.
    public var documentTypes: [String]?
    /// Accepted issuing states (ICAO three-letter codes).
    public var issuingStates: [String]?

    public init(faceMatchThreshold: Float? = nil, minimumAge: Int? = nil, documentTypes: [String]? = nil, issuingStates: [String]? = nil) {
        self.faceMatchThreshold = faceMatchThreshold
        self.minimumAge = minimumAge
        self.documentTypes = documentTypes
        self.issuingStates = issuingStates
    }

    /// Why the policy refuses `document` on `day`, nil when it is accepted.
    public func refusal(of document: KioskOCRData, on day: Date = Date()) -> String? {
        if let types = documentTypes, !types.contains(where: { document.documentType.hasPrefix($0) }) {
            return "document type \(document.documentType) is not accepted"
        }
        if let states = issuingStates, !states.contains(document.issuingState) {
            return "documents issued by \(document.issuingState) are not accepted"
        }
        if let minimumAge {
            guard let age = Self.age(birthDate: document.birthDate, on: day) else { return "the birth date is not readable" }
            if age < minimumAge { return "the customer must be at least \(minimumAge) years old" }
        }
        return nil
    }

    /// Whole years from a `YYYY-MM-DD` birth date to `day` (UTC).
    public static func age(birthDate: String, on day: Date) -> Int? {
        let parts = birthDate.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3 else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let today = calendar.dateComponents([.year, .month, .day], from: day)
        guard let year = today.year, let month = today.month, let dayOfMonth = today.day else { return nil }
        return year - parts[0] - ((month, dayOfMonth) < (parts[1], parts[2]) ? 1 : 0)
    }

    /// Checks the operator's input against the app's face model; the message names the field.
    public func validationError(model: FaceModel) -> String? {
        let range = model.thresholdRange
        if let threshold = faceMatchThreshold, !range.contains(threshold) {
            return "kioskApproval.faceMatchThreshold must be between \(range.lowerBound) and \(range.upperBound) for \(model.rawValue)"
        }
        if let age = minimumAge, !(0...150).contains(age) { return "kioskApproval.minimumAge must be between 0 and 150" }
        if documentTypes?.contains(where: { !(1...2).contains($0.count) }) == true { return "kioskApproval.documentTypes holds 1–2 letter codes" }
        if issuingStates?.contains(where: { $0.count != 3 }) == true { return "kioskApproval.issuingStates holds three-letter codes" }
        return nil
    }
}
