import Crypto
import FaceGateCore
import IdentityRecords
import FaceGateTestSupport
import Foundation
import JWT
@testable import KioskOrchestrator
import KioskSessionRecords
import ServiceKit
import Synchronization
import Testing

/// The kiosk onboarding flow over in-memory twins, in milliseconds: the session, its events and the transactions
/// committed with each move are kept in memory, the matchers' answers to its face jobs are scripted (which job it sends,
/// and with what, is what is asserted), and the document reading is given. Selfies are sealed and opened, and identity
/// tokens signed, with the real keys. End to end with the real matcher, OCR, broker and PostgreSQL: IntegrationTests'
/// KioskOnboardingTests and KioskFlowTests.
@Suite struct OnboardingFlowTests {
    let appId = UUID()
    let sessions = InMemoryKioskSessions()
    let records = InMemoryKioskRecords()
    let matcher = ScriptedFaceJobs()
    let documents = GivenDocuments()
    let signingSeed = SecureRandom.bytes(32)
    let flow: KioskFlow
    static let photo = Data("a selfie frame".utf8)
    static let portrait = Data("the document portrait's sealed template".utf8)
    static let document = KioskOCRData(documentType: "P", issuingState: "UTO", documentNumber: "L898902C3", surname: "ERIKSSON",
                                       givenNames: "ANNA MARIA", nationality: "UTO", birthDate: "1974-08-12", sex: "F", expiryDate: "2034-04-15")

    init() throws {
        flow = try KioskFlow(configuration: KioskFlow.Settings(sealingKey: SecureRandom.bytes(32), signingKey: signingSeed, issuer: "facegate",
                                                               identityTokenTTL: 300, sessionTTLSeconds: 600, maxAttempts: 3),
                             store: sessions, records: records, faces: matcher, documents: documents)
    }

    func command(_ session: UUID, _ payload: KioskCommand.Payload) async throws -> KioskCommandReply {
        try await flow.process(KioskCommand(sessionId: session, appId: appId, deviceId: "kiosk-key-thumbprint", kioskId: UUID(), clientIp: "192.0.2.9", payload))
    }

    func newSession() async throws -> UUID {
        let id = UUID()
        let created = try await command(id, .create(tokenHash: Data(repeating: 7, count: 32)))
        #expect(created.session?.state == .selfie)
        return id
    }

    static func found(_ user: UUID, at distance: Float) -> FaceJobResult {
        FaceJobResult(outcome: .match, candidates: [FaceCandidate(userId: user, templateId: UUID(), distance: distance)])
    }

    static func template(_ sealed: Data) -> FaceJobResult {
        var result = FaceJobResult(outcome: .detected)
        result.sealedTemplate = sealed
        return result
    }

    @Test func aKnownFaceCompletesTheFlowAsAnExistingCustomer() async throws {
        let customer = UUID()
        records.names.withLock { $0[customer] = "Anna Eriksson" }
        matcher.answer(Self.found(customer, at: 0.6))
        let session = try await newSession()
        let reply = try await command(session, .selfie(frames: [Self.photo], actions: nil))
        let view = try #require(reply.session)
        #expect(view.state == .completed)
        let result = try #require(view.result)
        #expect(result.success && result.existingUser && result.customerUUID == customer.wire && result.name == "Anna Eriksson")
        // Signed with the kiosk's own key, for this app, user and kiosk, the face its only factor.
        let kioskKey = try Ed25519PrivateKey(seed: signingSeed).publicKey
        let keys = JWTKeySet([(kid: KioskTokenKey.kidPrefix + JWTSigningKey.keyId(kioskKey), key: kioskKey)])
        let claims = try JWT.verify(try #require(result.token), as: IdentityTokenClaims.self, keys: keys, type: TokenType.identity,
                                    issuer: "facegate", audience: appId.wire)
        #expect(claims.sub == customer.wire && claims.method == "kiosk" && claims.amr == ["face"])
        #expect(view.events?.map(\.event) == [.selfieScanCompleted, .kioskFlowCompleted])
        guard case .identify(let image, _) = try #require(matcher.jobs.first).payload else {
            Issue.record("a selfie without liveness is one 1:N search")
            return
        }
        #expect(image == Self.photo && matcher.jobs.first?.threshold == 1.0)
        #expect(sessions.transactions.map(\.kind) == ["kiosk.flow"])
        #expect(sessions.transactions.first?.userId == customer && sessions.transactions.first?.outcome == "SUCCESS")
    }

    @Test func anUnknownFaceIsOnboardedFromItsDocument() async throws {
        let session = try await newSession()
        matcher.answer(FaceJobResult(outcome: .noMatchFace), Self.template(Self.portrait), Self.found(UUID(), at: 0.7),
                       FaceJobResult(outcome: .enrolled))
        #expect(try await command(session, .selfie(frames: [Self.photo], actions: nil)).session?.state == .idFront)
        #expect(try await command(session, .idFront(image: Data("front".utf8))).session?.state == .idBack)
        documents.reading.withLock { $0 = DocumentReading(document: Self.document, isExpired: false) }
        let view = try #require(try await command(session, .idBack(image: Data("back".utf8))).session)
        #expect(view.state == .completed)
        let customer = try #require(view.result?.customerUUID.flatMap(UUID.init(uuidString:)))
        #expect(view.result?.existingUser == false && view.result?.token != nil)
        #expect(records.customers.withLock { $0[customer] } == "UTO-L898902C3")
        #expect(view.steps.map(\.name) == ["selfie", "idFront", "idBack", "idProcessed", "faceMatch", "approval"])

        // The selfie kept between steps (sealed) is what the face match compares with the portrait, then enrolls.
        let jobs = matcher.jobs
        #expect(jobs.count == 4)
        guard case .verify(let probe, .sealedTemplate(let reference)) = jobs[2].payload, case .enroll(let enrollment) = jobs[3].payload else {
            Issue.record("not a face match then an enrollment: \(jobs.map(\.kind))")
            return
        }
        #expect(probe == Self.photo && reference == Self.portrait)
        #expect(enrollment.image == Self.photo && enrollment.userId == customer)
        #expect(sessions.transactions.map(\.kind) == ["kiosk.onboarding"])
        #expect(sessions.transactions.first?.score == 0.7)
        #expect(sessions.stored(session)?.data.selfie == nil && sessions.stored(session)?.data.portrait == nil,
                "a finished session keeps no biometric material")
    }

    @Test func aStepBeforeItsTurnIsRefusedAndAStepAlreadyTakenChangesNothing() async throws {
        let session = try await newSession()
        #expect(try await command(session, .idFront(image: Data("front".utf8))).error == .conflict)
        matcher.answer(FaceJobResult(outcome: .noMatchFace))
        #expect(try await command(session, .selfie(frames: [Self.photo], actions: nil)).session?.state == .idFront)
        let again = try await command(session, .selfie(frames: [Self.photo], actions: nil))
        #expect(again.session?.state == .idFront && matcher.jobs.count == 1, "a repeated step answers the session as it is")
        #expect(try await command(UUID(), .selfie(frames: [Self.photo], actions: nil)).error == .notFound)
    }

    @Test func aDocumentNumberAnotherCustomerHoldsEndsTheFlowWithoutACustomer() async throws {
        _ = records.taken.withLock { $0.insert("UTO-L898902C3") }
        documents.reading.withLock { $0 = DocumentReading(document: Self.document, isExpired: false) }
        matcher.answer(FaceJobResult(outcome: .noMatchFace), Self.template(Self.portrait), Self.found(UUID(), at: 0.7))
        let session = try await newSession()
        _ = try await command(session, .selfie(frames: [Self.photo], actions: nil))
        _ = try await command(session, .idFront(image: Data("front".utf8)))
        let view = try #require(try await command(session, .idBack(image: Data("back".utf8))).session)
        #expect(view.state == .failed && view.result?.success == false)
        #expect(view.events?.last?.data.error == ErrorCode.documentRegistered.rawValue)
        #expect(sessions.transactions.map(\.outcome) == ["DOCUMENT_ALREADY_REGISTERED"])
        #expect(matcher.jobs.count == 3, "nobody enrolled")
    }

    @Test func aPortraitThatIsNotTheSelfieEndsTheFlow() async throws {
        documents.reading.withLock { $0 = DocumentReading(document: Self.document, isExpired: false) }
        matcher.answer(FaceJobResult(outcome: .noMatchFace), Self.template(Self.portrait),
                       FaceJobResult(outcome: .noMatchFace, candidates: [FaceCandidate(userId: UUID(), templateId: UUID(), distance: 1.3)]))
        let session = try await newSession()
        _ = try await command(session, .selfie(frames: [Self.photo], actions: nil))
        _ = try await command(session, .idFront(image: Data("front".utf8)))
        let view = try #require(try await command(session, .idBack(image: Data("back".utf8))).session)
        #expect(view.state == .failed)
        #expect(sessions.transactions.map(\.outcome) == ["FACE_MISMATCH"] && sessions.transactions.first?.score == 1.3)
        #expect(records.customers.withLock { $0.isEmpty })
    }

    @Test func aStepThatKeepsFailingEndsTheSessionAfterItsAttempts() async throws {
        let session = try await newSession()
        for attempt in 1...3 {
            matcher.answer(FaceJobResult(outcome: .noFace, message: "no face in the frame"))
            let view = try #require(try await command(session, .selfie(frames: [Self.photo], actions: nil)).session)
            #expect(view.state == (attempt < 3 ? .selfie : .failed))
        }
        #expect(sessions.transactions.map(\.outcome) == ["TOO_MANY_ATTEMPTS"])
    }

    @Test func aMatcherThatDoesNotAnswerLeavesTheSessionWhereItWas() async throws {
        let session = try await newSession()
        await #expect(throws: KioskFlowError.self) { try await command(session, .selfie(frames: [Self.photo], actions: nil)) }
        #expect(sessions.stored(session)?.state == .selfie && sessions.transactions.isEmpty)
    }

    @Test func anExpiredSessionEndsAndRefusesItsSteps() async throws {
        let session = try await newSession()
        sessions.expire(session)
        #expect(try await flow.expireSessions() == 1)
        #expect(sessions.stored(session)?.state == .expired)
        #expect(try await command(session, .selfie(frames: [Self.photo], actions: nil)).error == .sessionExpired)
        #expect(matcher.jobs.isEmpty)
    }
}

// MARK: - Twins

/// Sessions, their events and the transactions committed with them, in memory; a move from a state the session is no
/// longer in changes nothing, as the PostgreSQL store's row lock makes it.
final class InMemoryKioskSessions: KioskSessionKeeper {
    private struct State {
        var sessions: [UUID: KioskSession] = [:]
        var events: [UUID: [KioskEvent]] = [:]
        var transactions: [TransactionRecord] = []
    }
    private let state = Mutex(State())

    var transactions: [TransactionRecord] { state.withLock { $0.transactions } }
    func stored(_ id: UUID) -> KioskSession? { state.withLock { $0.sessions[id] } }
    func expire(_ id: UUID) { state.withLock { $0.sessions[id]?.expiresAt = Date(timeIntervalSinceNow: -1) } }

    func session(_ id: UUID) async throws -> KioskSession? { stored(id) }

    func create(_ id: UUID, appId: UUID, tokenHash: [UInt8], deviceId: String?, kioskId: UUID?, ttlSeconds: Int) async throws {
        state.withLock { state in
            guard state.sessions[id] == nil else { return }
            state.sessions[id] = KioskSession(id: id, appId: appId, deviceId: deviceId, kioskId: kioskId, state: .selfie, data: KioskSessionData(),
                                              expiresAt: Date(timeIntervalSinceNow: TimeInterval(ttlSeconds)))
        }
    }

    func move(_ id: UUID, appId: UUID, from expected: KioskState, to next: KioskState, data: KioskSessionData,
              events: [(KioskEventName, KioskEventData)], customerId: UUID?, transaction: TransactionRecord?) async throws -> [KioskEvent]? {
        state.withLock { state in
            guard state.sessions[id]?.state == expected else { return nil }
            var seq = state.events[id]?.last?.seq ?? 0
            let stored = events.map { event in
                seq += 1
                return KioskEvent(seq: seq, event: event.0, data: event.1, at: Date())
            }
            state.events[id, default: []] += stored
            state.sessions[id]?.state = next
            state.sessions[id]?.data = data
            if let transaction { state.transactions.append(transaction) }
            return stored
        }
    }

    func view(of session: KioskSession, events produced: [KioskEvent]?) async throws -> KioskSessionView {
        let steps = state.withLock { $0.events[session.id] ?? [] }.compactMap { event in
            event.event.stepName.map { KioskSessionView.Step(name: $0, success: event.data.success ?? false, at: event.at) }
        }
        return KioskSessionView(interviewId: session.id, state: session.isExpired ? .expired : session.state, steps: steps,
                                result: session.data.result, expiresAt: session.expiresAt, events: produced)
    }

    func expiredUnfinished(limit: Int) async throws -> [(id: UUID, appId: UUID)] {
        state.withLock { $0.sessions.values.filter(\.isExpired).prefix(limit).map { ($0.id, $0.appId) } }
    }

    func eraseFinished(olderThan seconds: Int) async throws -> Int { 0 }
}

/// One app's rules (threshold 1.0, no approval rules), its users' names, and the customers the flow creates.
final class InMemoryKioskRecords: KioskRecords {
    let names = Mutex<[UUID: String]>([:])
    /// Customer id → number.
    let customers = Mutex<[UUID: String]>([:])
    /// Numbers held by customers created elsewhere.
    let taken = Mutex<Set<String>>([])
    private let enrolled = Mutex<Set<UUID>>([])

    func rules(of appId: UUID) async throws -> KioskRules { KioskRules(threshold: 1.0, approval: KioskApprovalPolicy()) }
    func name(of user: UUID) async throws -> String? { names.withLock { $0[user] } }

    func addCustomer(_ id: UUID, appId: UUID, number: String, name: String) async throws -> Bool {
        guard !taken.withLock({ $0.contains(number) }) else { return false }
        customers.withLock { $0[id] = number }
        return true
    }

    func isEnrolled(_ user: UUID) async throws -> Bool { enrolled.withLock { $0.contains(user) } }
    func removeCustomer(_ id: UUID) async throws { _ = customers.withLock { $0.removeValue(forKey: id) } }
}

/// The document the next reading finds.
final class GivenDocuments: DocumentReader {
    let reading = Mutex<DocumentReading?>(nil)

    func read(_ image: [UInt8]) async throws -> DocumentReading {
        guard let reading = reading.withLock({ $0 }) else { throw DocumentReadFailure(code: .documentUnreadable, message: "no document given") }
        return reading
    }
}
