import AuditRecords
import Crypto
import FaceGateCore
import IdentityRecords
import Foundation
import JWT
import KafkaClient
import KioskSessionRecords
import ServiceKit

/// The onboarding state machine. Each command does the work of one client step, then commits the
/// session's new state, its step events and (for decisions) one transaction together. The stages after
/// the document's back — processing, face match, approval — commit one by one, so a command re-delivered
/// after a crash picks up at the first stage not yet committed; a step the session has already passed
/// answers the session as it is (a repeat is harmless), a step it has not reached is refused.
final class KioskFlow: Sendable {
    /// What the flow reads of the orchestrator's configuration.
    struct Settings: Sendable {
        var sealingKey: [UInt8]
        var previousSealingKeys: [[UInt8]] = []
        /// The Ed25519 seed of the kiosk's own token key.
        var signingKey: [UInt8]
        var issuer: String
        var identityTokenTTL: TimeInterval
        var sessionTTLSeconds: Int
        /// Failed tries of one step before the session fails.
        var maxAttempts: Int
        var matcherShards = 1
        var commandGraceSeconds = 60
    }

    private let configuration: Settings
    private let store: any KioskSessionKeeper
    private let records: any KioskRecords
    private let faces: any FaceJobRequester
    private let documents: any DocumentReader
    private let sealer: Sealer
    /// Signs with the kiosk's own key (`kid` prefixed `kiosk-`), which vouches for kiosk logins only.
    private let identityTokens: IdentityTokenIssuer

    init(configuration: Settings, store: any KioskSessionKeeper, records: any KioskRecords, faces: any FaceJobRequester,
         documents: any DocumentReader) throws {
        self.configuration = configuration
        self.store = store
        self.records = records
        self.faces = faces
        self.documents = documents
        sealer = try Sealer(key: configuration.sealingKey, previous: configuration.previousSealingKeys)
        let key = try Ed25519PrivateKey(seed: configuration.signingKey)
        identityTokens = IdentityTokenIssuer(issuer: configuration.issuer,
                                             key: JWTSigningKey(kid: KioskTokenKey.kidPrefix + JWTSigningKey.keyId(key.publicKey), privateKey: key),
                                             ttl: configuration.identityTokenTTL)
    }

    /// Over PostgreSQL, publishing what it commits.
    convenience init(configuration: KioskConfiguration, runtime: ServiceRuntime, producer: KafkaProducer, faces: any FaceJobRequester,
                     documents: any DocumentReader) throws {
        let transactions = TransactionLog(database: runtime.database, publishing: (producer, runtime.topics.auditTransactions, runtime.background),
                                          logger: runtime.logger, keys: configuration.auditKeys)
        let settings = Settings(sealingKey: configuration.sealingKey, previousSealingKeys: configuration.previousSealingKeys,
                                signingKey: configuration.signingKey, issuer: configuration.issuer,
                                identityTokenTTL: configuration.identityTokenTTL, sessionTTLSeconds: configuration.sessionTTLSeconds,
                                maxAttempts: configuration.maxAttempts, matcherShards: configuration.matcherShards,
                                commandGraceSeconds: configuration.commandGraceSeconds)
        try self.init(configuration: settings,
                      store: PostgresKioskSessions(store: KioskSessionStore(database: runtime.database), transactions: transactions,
                                                   producer: producer, eventsTopic: runtime.topics.kioskEvents, logger: runtime.logger),
                      records: PostgresKioskRecords(database: runtime.database), faces: faces, documents: documents)
    }

    /// The consumer loop's handler: envelope, app scope and reply are the responder's. A command has no deadline
    /// answer (a step is worth finishing: a replacement resumes a command its predecessor was killed in), up to
    /// `KIOSK_COMMAND_GRACE_SECONDS` past its deadline; older, it is refused as expired, so a command replayed to a
    /// restarted or another orchestrator does nothing. A reply the broker did not take is not retried: the session already
    /// moved on, and the client sees it through GET or the event stream.
    func responder(_ runtime: ServiceRuntime, producer: KafkaProducer) -> JobResponder<KioskCommand> {
        JobResponder("kiosk command", runtime: runtime, producer: producer, app: \.appId, late: nil,
                     expiresAfter: .seconds(configuration.commandGraceSeconds), retryUnsentReply: false,
                     logFields: { ["kiosk.session": $0.sessionId.wire, "kiosk.step": $0.step.rawValue] },
                     work: { [self] envelope in try await process(envelope.payload) })
    }

    func process(_ command: KioskCommand) async throws -> KioskCommandReply {
        if case .create(let tokenHash) = command.payload { return try await create(command, tokenHash: tokenHash) }
        guard var session = try await store.session(command.sessionId), session.appId == command.appId else {
            return KioskCommandReply(error: .notFound, message: "no such kiosk session")
        }
        var run = Run(command: command)
        if session.state == .expired, command.step != .cancel {
            return KioskCommandReply(error: .sessionExpired, message: "the kiosk session has expired; start a new one")
        }
        if session.isExpired {
            try await commit(&session, &run, to: .expired, events: [(.kioskError, KioskEventData(message: "the session has expired", code: .sessionExpired))],
                             data: KioskSessionData())
            return KioskCommandReply(error: .sessionExpired, message: "the kiosk session has expired; start a new one")
        }
        switch command.step {
        case .cancel:
            if !session.state.isFinal {
                try await commit(&session, &run, to: .cancelled, events: [(.userCancelledSession, KioskEventData())], data: KioskSessionData())
            }
        case .selfie, .idFront, .idBack:
            let wanted = command.step.state!
            // The back's command also owns the stages after it, so it resumes them.
            let resumable: Set<KioskState> = command.step == .idBack ? [.faceMatch, .approval] : []
            if session.state.order < wanted.order {
                return KioskCommandReply(error: .conflict, message: "the session is waiting for the \(session.state.rawValue) step")
            }
            if session.state == wanted || resumable.contains(session.state) {
                switch command.payload {
                case .selfie(let frames, let actions): try await selfie(&session, &run, frames: frames, actions: actions)
                case .idFront(let image): try await idFront(&session, &run, image: image)
                case .idBack(let image): try await idBack(&session, &run, image: image)
                case .create, .cancel: break
                }
            }
        case .create:
            break
        }
        return KioskCommandReply(session: try await store.view(of: session, events: run.events))
    }

    /// What one command has produced so far.
    struct Run {
        var command: KioskCommand
        var events: [KioskEvent] = []
        let started = ContinuousClock.now
    }

    /// Deletes sessions that ended more than `seconds` ago, with their document data and events (the
    /// audit trail keeps the transactions).
    func eraseFinishedSessions(olderThan seconds: Int) async throws -> Int {
        try await store.eraseFinished(olderThan: seconds)
    }

    /// Ends sessions that expired unfinished: a `kioskError` SESSION_EXPIRED event, the sealed selfie and
    /// portrait erased. A session another replica expired first is left alone.
    func expireSessions() async throws -> Int {
        var expired = 0
        for (id, appId) in try await store.expiredUnfinished(limit: 100) {
            expired += try await Tenant.run(app: appId) {
                guard var session = try await store.session(id), session.isExpired else { return 0 }
                var run = Run(command: KioskCommand(sessionId: id, appId: appId, .cancel))
                do {
                    try await commit(&session, &run, to: .expired, events: [(.kioskError, KioskEventData(message: "the session has expired", code: .sessionExpired))],
                                     data: KioskSessionData())
                    return 1
                } catch KioskFlowError.moved {
                    return 0
                }
            }
        }
        return expired
    }

    // MARK: - Steps

    func create(_ command: KioskCommand, tokenHash: Data) async throws -> KioskCommandReply {
        try await store.create(command.sessionId, appId: command.appId, tokenHash: Array(tokenHash), deviceId: command.deviceId,
                               kioskId: command.kioskId,
                               ttlSeconds: configuration.sessionTTLSeconds)
        guard let session = try await store.session(command.sessionId) else { throw KioskStoreError.corrupt("session not created") }
        return KioskCommandReply(session: try await store.view(of: session, events: nil))
    }

    /// Liveness (when the app asks for it) and 1:N search in one matcher job: a known face completes
    /// the flow as an existing customer, an unknown one moves on to the document.
    func selfie(_ session: inout KioskSession, _ run: inout Run, frames: [Data], actions: [LivenessAction]?) async throws {
        guard !frames.isEmpty else {
            return try await fail(&session, &run, .selfieScanCompleted, .invalidRequest, "the selfie step needs frames")
        }
        let threshold = try await records.rules(of: session.appId).threshold
        let job = if let actions {
            FaceJob(appId: session.appId, threshold: threshold, .liveness(FaceJob.Burst(frames: frames, actions: actions, identify: true)))
        } else {
            FaceJob(appId: session.appId, threshold: threshold, .identify(image: frames[0], topK: 5))
        }
        let result = try await faceJob(job)
        switch result.outcome {
        case .match:
            let userId = result.candidates[0].userId
            let name = try await records.name(of: userId)
            let transaction = record(session, run, kind: "kiosk.flow", outcome: "SUCCESS", userId: userId, score: result.candidates[0].distance,
                                     detail: ["existingUser": "true"])
            let token = try identityToken(session, user: userId, transaction: transaction.id)
            var data = KioskSessionData()
            data.result = KioskResult(success: true, customerUUID: userId, token: token, name: name, existingUser: true)
            try await commit(&session, &run, to: .completed, events: [
                (.selfieScanCompleted, KioskEventData(success: true, existingUser: true, spoofAttempt: false)),
                (.kioskFlowCompleted, KioskEventData(success: true, existingUser: true, customerUUID: userId, name: name)),
            ], data: data, transaction: transaction, customerId: userId)  // erased with the customer, like their onboarding
        case .noMatchFace:
            let best = result.bestFrameIndex ?? 0
            var data = session.data
            data.selfie = Data(try sealer.seal(Array(frames[min(best, frames.count - 1)]), context: Self.selfieContext(session.id)))
            data.livenessPassed = actions != nil
            try await commit(&session, &run, to: .idFront, events: [
                (.selfieScanCompleted, KioskEventData(success: true, existingUser: false, spoofAttempt: false)),
            ], data: data)
        case .spoofDetected:
            try await fail(&session, &run, .selfieScanCompleted, .spoofDetected,
                           result.liveness?.reasons.joined(separator: "; ") ?? "liveness check failed", spoof: true)
        case .timeout, .internalError:
            throw KioskFlowError.matcher(result.message ?? result.outcome.rawValue)
        default:
            let code = result.outcome.errorCode ?? .internalError
            try await fail(&session, &run, .selfieScanCompleted, code, result.message ?? "the selfie was not usable")
        }
    }

    /// The document's front must show a face: its template (sealed with the platform key) is the
    /// reference of the face match. The photo itself is not kept.
    func idFront(_ session: inout KioskSession, _ run: inout Run, image: Data) async throws {
        let result = try await faceJob(FaceJob(appId: session.appId, .template(image: image)))
        switch result.outcome {
        case .enrolled, .detected, .match:
            guard let sealed = result.sealedTemplate else { throw KioskFlowError.matcher("template job answered without a template") }
            var data = session.data
            data.portrait = sealed
            try await commit(&session, &run, to: .idBack, events: [(.idFrontCompleted, KioskEventData(success: true))], data: data)
        case .noFace, .lowQuality:
            try await fail(&session, &run, .idFrontCompleted, .noPortrait, result.message ?? "no usable portrait was found on the document")
        case .timeout, .internalError:
            throw KioskFlowError.matcher(result.message ?? result.outcome.rawValue)
        default:
            try await fail(&session, &run, .idFrontCompleted, result.outcome.errorCode ?? .internalError, result.message ?? "the photo was not usable")
        }
    }

    /// Reads the MRZ, checks the document, matches its portrait against the selfie, and approves:
    /// each stage committed before the next starts.
    func idBack(_ session: inout KioskSession, _ run: inout Run, image: Data) async throws {
        if session.state == .idBack {
            let reading: DocumentReading
            do {
                reading = try await documents.read(Array(image))
            } catch let failure as DocumentReadFailure {
                return try await fail(&session, &run, .idBackCompleted, failure.code, failure.message)
            }
            var data = session.data
            let document = reading.document
            if reading.isExpired {
                data.portrait = nil
                try await commit(&session, &run, to: .idFront, events: [
                    (.idBackCompleted, KioskEventData(success: true)),
                    (.idProcessed, KioskEventData(success: false, error: .documentExpired,
                                                  message: "the document expired on \(document.expiryDate); scan another document", ocrData: document)),
                ], data: data)
                return
            }
            guard !(document.surname + document.givenNames).isEmpty else {
                return try await fail(&session, &run, .idProcessed, .documentInvalid, "the document carries no name")
            }
            data.document = document
            try await commit(&session, &run, to: .faceMatch, events: [
                (.idBackCompleted, KioskEventData(success: true)),
                (.idProcessed, KioskEventData(success: true, ocrData: document)),
            ], data: data)
        }
        if session.state == .faceMatch { try await faceMatch(&session, &run) }
        if session.state == .approval { try await approve(&session, &run) }
    }

    func faceMatch(_ session: inout KioskSession, _ run: inout Run) async throws {
        guard let sealedSelfie = session.data.selfie, let portrait = session.data.portrait else {
            throw KioskStoreError.corrupt("face match without a selfie or a portrait")
        }
        let selfie = try sealer.open(Array(sealedSelfie), context: Self.selfieContext(session.id))
        let rules = try await records.rules(of: session.appId)
        let threshold = rules.approval.faceMatchThreshold ?? rules.threshold
        let result = try await faceJob(FaceJob(appId: session.appId, threshold: threshold,
                                               .verify(image: Data(selfie), against: .sealedTemplate(portrait))))
        let distance = result.candidates.first?.distance
        var data = session.data
        data.faceDistance = distance
        switch result.outcome {
        case .match:
            try await commit(&session, &run, to: .approval, events: [(.faceMatchCompleted, KioskEventData(success: true, distance: distance))], data: data)
        case .noMatchFace, .noFace, .lowQuality, .ambiguousMatch:
            let message = "the face on the document does not match the selfie"
            session.data = data
            try await end(&session, &run, code: .faceMismatch, message: message,
                          first: [(.faceMatchCompleted, KioskEventData(success: false, error: .faceMismatch, message: message, distance: distance))],
                          score: distance)
        default:
            throw KioskFlowError.matcher(result.message ?? result.outcome.rawValue)
        }
    }

    /// Approval: the fixed rules held on the way here (a selfie that passed the app's liveness policy, an
    /// unexpired document whose check digits held and which carries a name, a face match within the
    /// threshold); the app's `kioskApproval` rules are checked now. Then the customer is created (its id
    /// derived from the session, so a re-run creates nothing twice) and the selfie enrolled.
    func approve(_ session: inout KioskSession, _ run: inout Run) async throws {
        guard let document = session.data.document, let sealedSelfie = session.data.selfie else {
            throw KioskStoreError.corrupt("approval without a document or a selfie")
        }
        if let refusal = try await records.rules(of: session.appId).approval.refusal(of: document) {
            return try await end(&session, &run, code: .approvalDenied, message: refusal)
        }
        let customerId = session.data.customerId ?? Self.customerId(for: session.id)
        let name = document.displayName
        guard try await records.addCustomer(customerId, appId: session.appId, number: customerNumber(document), name: name) else {
            // Another customer of the app already holds this document number.
            return try await end(&session, &run, code: .documentRegistered, message: "the document is already registered to another customer")
        }
        if try await !records.isEnrolled(customerId) {
            let selfie = try sealer.open(Array(sealedSelfie), context: Self.selfieContext(session.id))
            let result = try await faceJob(FaceJob(appId: session.appId, .enroll(FaceJob.Enrollment(image: Data(selfie), userId: customerId))))
            guard result.outcome == .enrolled else {
                if [.timeout, .internalError].contains(result.outcome) { throw KioskFlowError.matcher(result.message ?? result.outcome.rawValue) }
                try await records.removeCustomer(customerId)
                return try await end(&session, &run, code: result.outcome.errorCode ?? .internalError,
                                     message: result.message ?? "the selfie could not be enrolled")
            }
        }
        let transaction = record(session, run, kind: "kiosk.onboarding", outcome: "SUCCESS", userId: customerId, score: session.data.faceDistance,
                                 detail: ["documentType": document.documentType, "issuingState": document.issuingState,
                                          "livenessChecked": String(session.data.livenessPassed ?? false)])
        let token = try identityToken(session, user: customerId, transaction: transaction.id)
        let result = KioskResult(success: true, customerUUID: customerId, token: token, name: name, existingUser: false)
        try await commit(&session, &run, to: .completed, events: [
            (.kioskFlowCompleted, KioskEventData(success: true, existingUser: false, customerUUID: customerId, name: name)),
        ], data: Self.finished(session.data, result), transaction: transaction, customerId: customerId)
    }

    // MARK: - Helpers

    /// The flow ends without a customer: `kioskFlowCompleted` with `success: false` and why.
    func end(_ session: inout KioskSession, _ run: inout Run, code: ErrorCode, message: String,
             first: [(KioskEventName, KioskEventData)] = [], score: Float? = nil) async throws {
        let transaction = record(session, run, kind: "kiosk.onboarding", outcome: code.rawValue, score: score)
        try await commit(&session, &run, to: .failed, events: first + [
            (.kioskFlowCompleted, KioskEventData(success: false, existingUser: false, error: code, message: message)),
        ], data: Self.finished(session.data, KioskResult(success: false, customerUUID: nil, token: nil, name: nil, existingUser: false)),
           transaction: transaction)
    }

    /// A step failed on its merits: its event says why and the session stays at the step for a retake,
    /// until the attempts run out.
    func fail(_ session: inout KioskSession, _ run: inout Run, _ event: KioskEventName, _ code: ErrorCode, _ message: String,
              spoof: Bool = false) async throws {
        var data = session.data
        let step = event.stepName ?? event.rawValue
        let failures = (data.failures?[step] ?? 0) + 1
        data.failures = (data.failures ?? [:]).merging([step: failures]) { $1 }
        var events: [(KioskEventName, KioskEventData)] = [
            (event, KioskEventData(success: false, spoofAttempt: event == .selfieScanCompleted ? spoof : nil, error: code, message: message)),
        ]
        var state = session.state
        var transaction: TransactionRecord?
        if spoof || failures >= configuration.maxAttempts {
            transaction = record(session, run, kind: "kiosk.\(run.command.step.rawValue)", outcome: spoof ? code.rawValue : ErrorCode.tooManyAttempts.rawValue)
        }
        if failures >= configuration.maxAttempts {
            state = .failed
            events.append((.kioskError, KioskEventData(message: "\(failures) failed attempts at the \(step) step", code: .tooManyAttempts)))
            data = Self.finished(data, KioskResult(success: false, customerUUID: nil, token: nil, name: nil, existingUser: false))
        }
        try await commit(&session, &run, to: state, events: events, data: data, transaction: transaction)
    }

    /// Commits the session's next state, its events and the optional transaction atomically, provided nobody moved the
    /// session meanwhile (the store publishes them after).
    func commit(_ session: inout KioskSession, _ run: inout Run, to state: KioskState, events: [(KioskEventName, KioskEventData)],
                data: KioskSessionData, transaction: TransactionRecord? = nil, customerId: UUID? = nil) async throws {
        guard let stored = try await store.move(session.id, appId: session.appId, from: session.state, to: state, data: data, events: events,
                                                customerId: customerId, transaction: transaction) else { throw KioskFlowError.moved }
        session.state = state
        session.data = data
        run.events += stored
    }

    func faceJob(_ job: FaceJob) async throws -> FaceJobResult {
        do {
            return try await faces.faceJob(job, shards: configuration.matcherShards)
        } catch {
            throw KioskFlowError.matcher("\(error)")
        }
    }

    func record(_ session: KioskSession, _ run: Run, kind: String, outcome: String, userId: UUID? = nil, score: Float? = nil,
                detail: [String: String] = [:]) -> TransactionRecord {
        TransactionRecord(id: UUID(), appId: session.appId, kind: kind, outcome: outcome, userId: userId, deviceId: session.deviceId,
                          clientIp: run.command.clientIp, score: score,
                          latencyMs: Int((ContinuousClock.now - run.started).milliseconds.rounded()),
                          detail: detail.merging(["interviewId": session.id.wire,
                                                  TransactionRecord.actorKey: session.kioskId.map { "kiosk:" + $0.wire } ?? "client:" + (session.deviceId ?? "")]) { $1 })
    }

    func identityToken(_ session: KioskSession, user: UUID, transaction: UUID) throws -> String {
        // A registered kiosk's key (its thumbprint is the session's device) goes in `cnf`; the face is the user's only factor.
        try identityTokens.issue(app: session.appId, user: user, device: session.deviceId ?? "kiosk", method: "kiosk", transaction: transaction,
                                 keyThumbprint: session.kioskId == nil ? nil : session.deviceId, amr: ["face"], kioskId: session.kioskId)
    }

    /// The customer number: the document's, prefixed by its issuer, unique per app.
    func customerNumber(_ document: KioskOCRData) -> String {
        "\(document.issuingState)-\(document.documentNumber)"
    }

    /// A final session keeps its result and drops the biometric material.
    static func finished(_ data: KioskSessionData, _ result: KioskResult) -> KioskSessionData {
        var data = data
        data.selfie = nil
        data.portrait = nil
        data.result = result
        return data
    }

    static func selfieContext(_ session: UUID) -> String { "kiosk-selfie:\(session.wire)" }

    /// The customer created by a session: the session id hashed into a UUID (version 8, RFC 9562).
    static func customerId(for session: UUID) -> UUID {
        var bytes = SHA256.hash(Array("facegate kiosk customer \(session.wire)".utf8)).prefix(16).map { $0 }
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}

enum KioskFlowError: Error, CustomStringConvertible {
    /// The session changed under the command (a concurrent command); the retry sees the new state.
    case moved
    case matcher(String)

    var description: String {
        switch self {
        case .moved: "the session moved on during the command"
        case .matcher(let detail): "face matching unavailable: \(detail)"
        }
    }
}
