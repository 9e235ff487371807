import AppRecords
@testable import AuthGateway
import FaceGateCore
import Foundation
import IdentityRecords
import Testing

/// `FaceComparison` over in-memory stores and a scripted matcher (what the matcher would have found). End to end, on the
/// real models: IntegrationTests' IntegratorTests.
@Suite struct FaceComparisonUseCaseTests {
    let clock = FakeClock()
    let users = InMemoryUserDirectory()
    let counters: InMemoryAttemptCounters
    let matcher = ScriptedMatcher()
    let app = AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                        matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: .initial, deviceBinding: .header,
                        deviceBindingPolicy: .employeeNumber, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                        keepEnrollmentPhotos: false, createdAt: Date())

    let bindings: InMemoryDeviceBindings

    init() {
        counters = InMemoryAttemptCounters(clock: clock)
        bindings = InMemoryDeviceBindings(clock: clock)
    }

    static let phone = ClientDevice(id: "phone-1", isKey: false)

    /// Binds `device` to `user` the way a confirmed face login does.
    func bind(_ device: ClientDevice, to user: UUID) async throws {
        let pending = PendingConfirmation(appId: app.id, deviceId: device.id, userId: user, candidates: [.init(userId: user, distance: 0.3)],
                                          transactionId: UUID(), score: 0.3, ttlSeconds: 60)
        try await bindings.open(pending)
        try await bindings.bind(confirmation: pending.id, appId: app.id, device: device, user: user, ticket: nil)
    }

    var comparison: FaceComparison {
        FaceComparison(admission: AdmitEverything(),
                       attempts: AttemptGuard(store: counters, rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 6),
                                              addressRule: .init(throttleAfter: 100, throttleSeconds: 30, lockAfter: 0)),
                       users: users, bindings: bindings, matcher: matcher)
    }

    static func result(_ outcome: FaceOutcome, _ candidates: [(UUID, Float)] = []) -> FaceJobResult {
        FaceJobResult(outcome: outcome, candidates: candidates.map { FaceCandidate(userId: $0.0, templateId: UUID(), distance: $0.1) })
    }

    func verify(_ claim: FaceComparison.Claim, by verifier: FaceComparison.Verifier = .client(device: phone, address: "198.51.100.7"))
        async throws -> FaceComparison.Verdict {
        var draft = TransactionDraft(appId: app.id, kind: "face.verify")
        return try await comparison.verify(app: app, by: verifier, image: { Data("photo".utf8) }, claim: { claim }, draft: &draft)
    }

    @Test func aClaimedUserIsComparedOneToOneAndAStrangerLearnsNothingMore() async throws {
        let obama = users.add(appId: app.id, employeeNumber: "E1001")
        try await bind(Self.phone, to: obama)
        matcher.answer(Self.result(.match, [(obama, 0.31)]), Self.result(.noMatchFace, [(obama, 0.9)]), Self.result(.noMatchFace))
        let yes = try await verify(.init(employeeNumber: " E1001 "))
        #expect(yes == FaceComparison.Verdict(match: true, userId: obama, distance: 0.31))
        #expect(matcher.jobs.first?.payload == .verify(image: Data("photo".utf8), against: .user(obama)) && matcher.jobs.first?.threshold == app.matchThreshold)
        #expect(try await verify(.init(userId: obama.wire)).match == false)
        // A user not in the app: still compared, with a fresh id that holds no template, and answered like a stranger.
        let unknown = try await verify(.init(employeeNumber: "E9999"))
        #expect(unknown.match == false && unknown.userId == nil)
        guard case .verify(_, .user(let stranger)) = matcher.jobs[2].payload else { Issue.record("not compared with a user"); return }
        #expect(matcher.jobs.count == 3 && stranger != obama)
        // The app server is told instead, before any comparison.
        #expect(await errorCode { try await verify(.init(employeeNumber: "E9999"), by: .appServer) } == .notFound)
        #expect(await errorCode { try await verify(.init(userId: "not-a-uuid")) } == .invalidRequest)
        #expect(await errorCode { try await verify(.init()) } == .invalidRequest)
        #expect(matcher.jobs.count == 3)
    }

    @Test func failedVerificationsOfOneUserThrottleItFromEveryDevice() async throws {
        let obama = users.add(appId: app.id, employeeNumber: "E1001")
        let devices = ["phone-1", "phone-2", "phone-3", "phone-4"].map { ClientDevice(id: $0, isKey: false) }
        for device in devices { try await bind(device, to: obama) }
        matcher.answer(Self.result(.noMatchFace), Self.result(.noMatchFace), Self.result(.noMatchFace))
        for device in devices.prefix(3) {
            _ = try await verify(.init(userId: obama.wire), by: .client(device: device, address: "198.51.100.\(device.id.count)"))
        }
        #expect(await errorCode { try await verify(.init(userId: obama.wire), by: .client(device: devices[3], address: "203.0.113.9")) } == .rateLimited)
        #expect(await errorCode { try await verify(.init(userId: obama.wire), by: .appServer) } == .rateLimited, "the claimed user is charged whoever asks")
        #expect(matcher.jobs.count == 3)
        // A refusal of the matcher is the answer (a photo without a face is no comparison).
        clock.advance(seconds: 31)
        matcher.answer(FaceJobResult(outcome: .noFace))
        #expect(await errorCode { try await verify(.init(userId: obama.wire)) } == .noFace)
    }

    /// A client device that is not bound to the user it names learns nothing: the probe is compared with nobody, whatever
    /// the number, so guessing numbers with a victim's photo gets `false` every time, and the victim is not charged.
    @Test func aClientComparesOnlyWithTheUsersItsDeviceIsBoundTo() async throws {
        let victim = users.add(appId: app.id, employeeNumber: "E1001")
        let attacker = ClientDevice(id: "thumbprint-attacker", isKey: true)
        for number in ["E1000", "E1001", "E1002"] {
            matcher.answer(Self.result(.noMatchFace))
            let verdict = try await verify(.init(employeeNumber: number), by: .client(device: attacker, address: "203.0.113.\(number.count)"))
            #expect(verdict.match == false)
        }
        for job in matcher.jobs {
            guard case .verify(_, .user(let compared)) = job.payload else { Issue.record("not a 1:1 job"); continue }
            #expect(compared != victim, "compared with the victim's templates")
        }
        // The victim's own bound phone still verifies them.
        try await bind(Self.phone, to: victim)
        matcher.answer(Self.result(.match, [(victim, 0.3)]))
        #expect(try await verify(.init(employeeNumber: "E1001")).match)
    }

    @Test func searchShowsOperatorsTheBestCandidatePerUserAndTheAppServerOnlyTheMatch() async throws {
        let obama = users.add(appId: app.id, employeeNumber: "E1001")
        let biden = users.add(appId: app.id, employeeNumber: "E1002")
        let gone = UUID()
        let found = Self.result(.match, [(biden, 0.52), (obama, 0.30), (obama, 0.35), (gone, 0.4)])
        matcher.answer(found, found, Self.result(.ambiguousMatch, [(obama, 0.30), (biden, 0.31)]))
        var draft = TransactionDraft(appId: app.id, kind: "face.search")
        let operatorView = try await comparison.search(app: app, forAppServer: false, limit: 5,
                                                       image: { Data("photo".utf8) }, draft: &draft)
        #expect(operatorView.outcome == .match && operatorView.match?.userId == obama && operatorView.match?.employeeNumber == "E1001")
        #expect(operatorView.candidates.map(\.userId) == [obama, biden], "one per user, best first; a user no longer in the app is left out")
        #expect(matcher.jobs.first?.kind == .identify && matcher.jobs.first?.topK == 15)
        #expect(draft.userId == obama && draft.score == 0.30)

        let appServerView = try await comparison.search(app: app, forAppServer: true, limit: 5,
                                                        image: { Data("photo".utf8) }, draft: &draft)
        #expect(appServerView.candidates.map(\.userId) == [obama])
        let ambiguous = try await comparison.search(app: app, forAppServer: false, limit: 1,
                                                    image: { Data("photo".utf8) }, draft: &draft)
        #expect(ambiguous.outcome == .ambiguousMatch && ambiguous.match == nil && ambiguous.candidates.count == 1)
        #expect(draft.outcome == FaceOutcome.ambiguousMatch.rawValue && matcher.jobs.last?.topK == 10)
    }
}
