import AuditRecords
import CTIDRecords
import Crypto
import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit
import Synchronization

/// Answers CTID jobs: opens the app's envelope (tag first), consumes the serial once, checks the
/// claimed identity against the registry (and the portrait through a matcher), answers in a fresh
/// envelope, and records one `ctid.verify` transaction per attempt with the number masked.
final class CTIDJobHandler: Sendable {
    private let records: any VerifierRecords
    private let serials: any CTIDSerialStore
    private let registry: any IdentityRegistry
    private let faces: any FaceJobRequester
    private let transactions: any TransactionRecorder
    private let privateKey: [UInt8]
    private let logger: Logger
    private let keys = Mutex<[UUID: [UInt8]]>([:])
    /// Distances this far above the app's threshold are "suspected" rather than "different".
    static let suspectedBand: Float = 0.1

    init(records: any VerifierRecords, serials: any CTIDSerialStore, registry: any IdentityRegistry, faces: any FaceJobRequester,
         transactions: any TransactionRecorder, privateKey: [UInt8], logger: Logger) {
        self.records = records
        self.serials = serials
        self.registry = registry
        self.faces = faces
        self.transactions = transactions
        self.privateKey = privateKey
        self.logger = logger
    }

    /// Over PostgreSQL, the transactions also published on the audit topic.
    convenience init(runtime: ServiceRuntime, producer: KafkaProducer, registry: any IdentityRegistry, faces: any FaceJobRequester,
                     privateKey: [UInt8], auditKeys: AuditKeys) {
        self.init(records: PostgresVerifierRecords(database: runtime.database), serials: PostgresCTIDSerials(database: runtime.database),
                  registry: registry, faces: faces,
                  transactions: TransactionLog(database: runtime.database, publishing: (producer, runtime.topics.auditTransactions, runtime.background),
                                               logger: runtime.logger, keys: auditKeys),
                  privateKey: privateKey, logger: runtime.logger)
    }

    /// The consumer loop's handler: envelope, deadline, app scope and reply are the responder's.
    func responder(_ runtime: ServiceRuntime, producer: KafkaProducer) -> JobResponder<CTIDJob> {
        JobResponder("ctid job", runtime: runtime, producer: producer, app: \.appId,
                     late: { _ in CTIDJobResult(outcome: .unavailable, message: "deadline passed before the job was taken") },
                     work: { [self] envelope in try await handle(envelope.payload, messageId: envelope.id) })
    }

    /// The answer to one job; `messageId` is its envelope's, under which a verification's first answer is kept.
    func handle(_ job: CTIDJob, messageId: String) async throws -> CTIDJobResult {
        switch job.payload {
        case .verify(let sealed, let deviceId, let clientIp):
            try await verify(sealed, appId: job.appId, deviceId: deviceId, clientIp: clientIp, messageId: messageId)
        case .register(let entry):
            try await register(entry, appId: job.appId)
        }
    }

    // MARK: - Keys

    /// The app's institution key, opened from its sealed copy; nil when the app has none.
    func institutionKey(_ appId: UUID) async throws -> [UInt8]? {
        if let key = keys.withLock({ $0[appId] }) { return key }
        guard let sealed = try await records.app(appId)?.sealedKey else { return nil }
        let key = try CTIDKeyBox.open(sealed, appId: appId, with: privateKey)
        keys.withLock { $0[appId] = key }
        return key
    }

    // MARK: - Verification

    struct Verdict {
        var authResult: String
        var code: CTIDResultCode
        var message: String
        var score: Float?
        var authMode: String?

        /// The verdict came after the serial was spent, so it may say something about the claimed identity (a portrait
        /// that cannot be used is only reached once the number and name held): such tries count against that identity,
        /// and their verdict is withheld once it has been tried too often.
        var judgedIdentity: Bool { code != .serialInvalid }
    }

    private func verify(_ sealed: CTIDEnvelope?, appId: UUID, deviceId: String?, clientIp: String?, messageId: String) async throws -> CTIDJobResult {
        // A redelivered job answers what the first delivery answered (the serial is already consumed).
        if let answered = try await records.answer(to: messageId) { return try FaceGateJSON.decode(CTIDJobResult.self, from: answered) }
        let started = ContinuousClock.now
        let transactionId = UUID()
        func record(_ outcome: String, detail: [String: String], score: Float? = nil) async throws {
            try await transactions.append(TransactionRecord(
                id: transactionId, appId: appId, kind: "ctid.verify", outcome: outcome, deviceId: deviceId, clientIp: clientIp,
                score: score, latencyMs: Int((ContinuousClock.now - started).milliseconds.rounded()),
                // The caller is the client device the gateway authenticated for this job.
                detail: detail.merging([TransactionRecord.actorKey: "client" + (deviceId.map { ":" + $0 } ?? "")]) { $1 }))
        }
        guard let sealed, let key = try await institutionKey(appId), let plaintext = try? sealed.open(expectedAppId: appId, key: key) else {
            try await record(ErrorCode.invalidEnvelope.rawValue, detail: [:])
            return CTIDJobResult(outcome: .invalidEnvelope, transactionId: transactionId, attempt: .failure)
        }
        // Past the MAC there is no oracle to protect: a malformed plaintext gets a sealed answer naming the field.
        let verdict: Verdict
        var detail: [String: String] = [:]
        var bizSerialNum = ""
        var registryEntry: String?
        do {
            let request = try FaceGateJSON.decode(CTIDVerificationRequest.self, from: plaintext)
            bizSerialNum = request.bizSerialNum
            registryEntry = registry.attemptKey(appId: appId, number: request.idNumber.trimmingCharacters(in: .whitespaces))
            verdict = try await check(request, appId: appId)
            detail["idNumber"] = ResidentIDNumber.mask(request.idNumber)
        } catch let error as DecodingError {
            let field = CTIDVerificationRequest.field(of: error)
            bizSerialNum = (try? JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: Any])?["bizSerialNum"] as? String ?? ""
            verdict = Verdict(authResult: "XXXX", code: .invalidData, message: field.isEmpty
                              ? "the plaintext is not the request object (a JSON object)" : "the request's \(field) is missing or malformed")
            detail["field"] = field
        }
        detail["resultCode"] = verdict.code.rawValue
        detail["authResult"] = verdict.authResult
        if let mode = verdict.authMode { detail["authMode"] = mode }
        try await record(verdict.code == .verified ? "SUCCESS" : "CTID_" + String(describing: verdict.code).uppercased(), detail: detail, score: verdict.score)
        let answer = CTIDVerificationAnswer(bizSerialNum: bizSerialNum, authResult: verdict.authResult, resultCode: verdict.code.rawValue,
                                            message: verdict.message, transactionId: transactionId.uuidString.lowercased())
        let result = CTIDJobResult(outcome: .answered, envelope: try CTIDEnvelope.seal(try FaceGateJSON.encode(answer), appId: appId, key: key),
                                   transactionId: transactionId, attempt: verdict.code.attempt,
                                   registryEntry: verdict.judgedIdentity ? registryEntry : nil)
        try await records.keep(try FaceGateJSON.encode(result), for: messageId)
        return result
    }

    /// Spends the serial (only one of any number of concurrent attempts gets it), then checks the claim element by
    /// element.
    private func check(_ request: CTIDVerificationRequest, appId: UUID) async throws -> Verdict {
        let serialFailure = Verdict(authResult: "XXXX", code: .serialInvalid, message: "the serial number is unknown, used, expired or does not match")
        guard (1...128).contains(request.bizSerialNum.utf8.count) else { return serialFailure }
        guard let serial = try await serials.spend(request.bizSerialNum, appId: appId), serial.live,
              constantTimeEquals(Array(serial.randNum.utf8), Array(request.randNum.utf8)) else { return serialFailure }
        let rawMode = serial.authMode
        let modeText = String(format: "0x%02x", rawMode)
        guard let mode = CTIDAuthMode(rawValue: rawMode) else {
            return Verdict(authResult: "XXXX", code: .unsupportedMode, message: "unsupported auth mode", authMode: modeText)
        }
        func identityInvalid(_ code: CTIDResultCode, _ message: String) -> Verdict {
            Verdict(authResult: "5XXX", code: code, message: message, authMode: mode.wire)
        }
        if let claimed = request.authMode, CTIDAuthMode(wire: claimed) != mode {
            return identityInvalid(.invalidData, "authMode \(claimed) is not the mode the serial number was issued for (\(mode.wire))")
        }
        let number: ResidentIDNumber
        do { number = try ResidentIDNumber(request.idNumber) } catch { return identityInvalid(.invalidData, error.description) }
        let name = request.name.trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(name.count) else { return identityInvalid(.invalidData, "the name is missing or too long") }
        if mode.checksValidity {
            guard let start = request.validDateStart, let end = request.validDateEnd else {
                return identityInvalid(.invalidData, "this mode needs validDateStart and validDateEnd")
            }
            switch Self.validity(start: start, end: end) {
            case .malformed: return identityInvalid(.invalidData, "validity dates must be YYYYMMDD (the end may be 长期)")
            case .notCurrent: return identityInvalid(.mismatch, "the identity document is not valid today")
            case .current: break
            }
        }
        guard let registered = try await registry.lookup(appId: appId, number: number.value) else {
            return identityInvalid(.mismatch, "the identity could not be confirmed")
        }
        var identityMatches = registered.name == name
        if mode.checksValidity {
            identityMatches = identityMatches && registered.validStart == request.validDateStart && registered.validEnd == request.validDateEnd
                && Self.validity(start: registered.validStart, end: registered.validEnd) == .current
        }
        guard identityMatches else { return identityInvalid(.mismatch, "the identity could not be confirmed") }
        guard mode.checksPortrait else {
            return Verdict(authResult: "", code: .verified, message: "verified", authMode: mode.wire)
        }
        guard let template = registered.sealedTemplate else {
            return Verdict(authResult: "0DXX", code: .mismatch, message: "no portrait is on file for this identity", authMode: mode.wire)
        }
        guard let photo = request.photoData, !photo.isEmpty else {
            return Verdict(authResult: "0XXX", code: .portraitUnusable, message: "this mode needs photoData", authMode: mode.wire)
        }
        // An app deleted meanwhile took its serials with it.
        guard let threshold = try await records.app(appId)?.matchThreshold else { return serialFailure }
        // The serial is consumed: a matcher fault is answered (the client asks for a new serial), never retried.
        let unavailable = Verdict(authResult: "0XXX", code: .unavailable, message: "face matching is unavailable right now; try again", authMode: mode.wire)
        let face: FaceJobResult
        do {
            face = try await faces.faceJob(FaceJob(appId: appId, threshold: threshold, .verify(image: photo, against: .sealedTemplate(template))))
        } catch {
            logger.warning("portrait check not answered", ["error": "\(error)", "app.id": appId.uuidString.lowercased()])
            return unavailable
        }
        let distance = face.candidates.first?.distance
        switch face.outcome {
        case .match:
            return Verdict(authResult: "", code: .verified, message: "verified", score: distance, authMode: mode.wire)
        case .noMatchFace:
            let suspected = (distance ?? .infinity) <= threshold + Self.suspectedBand
            return Verdict(authResult: suspected ? "02XX" : "01XX", code: .mismatch,
                           message: suspected ? "the portrait may not be the same person" : "the portrait is a different person",
                           score: distance, authMode: mode.wire)
        case .timeout, .internalError:
            return unavailable
        default:
            return Verdict(authResult: "0XXX", code: .portraitUnusable, message: "the portrait could not be used: " + (face.message ?? face.outcome.rawValue),
                           authMode: mode.wire)
        }
    }

    enum Validity { case malformed, notCurrent, current }


    /// `start ≤ today ≤ end` in China Standard Time; `长期` is an open end.
    static func validity(start: String, end: String, today: CalendarDate = CalendarDate(Date())) -> Validity {
        guard let first = CalendarDate(yyyymmdd: start) else { return .malformed }
        let last: CalendarDate?
        if end == "长期" { last = nil } else {
            guard let parsed = CalendarDate(yyyymmdd: end) else { return .malformed }
            last = parsed
        }
        if let last, last < first { return .malformed }
        return first <= today && (last.map { today <= $0 } ?? true) ? .current : .notCurrent
    }

    // MARK: - Registration

    private func register(_ entry: CTIDRegistration, appId: UUID) async throws -> CTIDJobResult {
        guard try await records.app(appId) != nil else {
            return CTIDJobResult(outcome: .notFound, message: "no such app")
        }
        let number: ResidentIDNumber
        do { number = try ResidentIDNumber(entry.number) } catch { return CTIDJobResult(outcome: .invalidRequest, message: error.description) }
        let name = entry.name.trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(name.count) else { return CTIDJobResult(outcome: .invalidRequest, message: "name must be 1–200 characters") }
        guard Self.validity(start: entry.validDateStart, end: entry.validDateEnd, today: CalendarDate(Date())) != .malformed else {
            return CTIDJobResult(outcome: .invalidRequest, message: "validDateStart and validDateEnd must be YYYYMMDD (the end may be 长期), start before end")
        }
        var template: Data?
        if let photo = entry.photoData {
            let face: FaceJobResult
            do { face = try await faces.faceJob(FaceJob(appId: appId, .template(image: photo))) } catch {
                return CTIDJobResult(outcome: .unavailable, message: "face matching is unavailable right now; try again")
            }
            switch face.outcome {
            case .detected where face.sealedTemplate != nil: template = face.sealedTemplate
            case .timeout, .internalError: return CTIDJobResult(outcome: .unavailable, message: "face matching is unavailable right now; try again")
            default: return CTIDJobResult(outcome: .imageRejected, message: face.message ?? "the photo has no usable face (\(face.outcome.rawValue))")
            }
        }
        try await registry.register(appId: appId, number: number.value,
                                    identity: RegisteredIdentity(name: name, validStart: entry.validDateStart, validEnd: entry.validDateEnd, sealedTemplate: template))
        return CTIDJobResult(outcome: .registered)
    }
}

extension CTIDResultCode {
    /// How a verdict counts for the attempt limits: a claim that did not hold (identity, portrait, serial) is a failure; a
    /// request that could not be judged is neither.
    var attempt: CTIDJobResult.Attempt {
        switch self {
        case .verified: .success
        case .mismatch, .serialInvalid: .failure
        case .invalidData, .unsupportedMode, .portraitUnusable, .unavailable: .neutral
        }
    }
}
