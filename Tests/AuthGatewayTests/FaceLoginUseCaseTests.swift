import AppRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import IdentityRecords
import JWT
import Testing

/// `FaceLogin` over in-memory stores and a scripted matcher: who gets a token, who is asked to confirm, what is
/// charged to whom. Milliseconds a test; the same flows on the real stack with real photos are IntegrationTests'
/// (FaceLoginTests, DPoPTests, TakeoverTests).
@Suite struct FaceLoginUseCaseTests {
    /// A FaceLogin over fresh fakes, with an app, its users and a rule of 3 failures → 30 s wait, 6 → lock.
    struct World {
        let clock = FakeClock()
        let counters: InMemoryAttemptCounters
        let bindings: InMemoryDeviceBindings
        let users = InMemoryUserDirectory()
        let challenges: InMemoryLivenessChallenges
        let matcher = ScriptedMatcher()
        let signingKey = JWTSigningKey(kid: "test", privateKey: Ed25519PrivateKey())
        let migrations = Calls<UUID>()
        let kiosks = InMemoryKioskKeys()
        var app: AppRecord

        init(binding: DeviceBinding = .header, policy: DeviceBindingPolicy = .employeeNumber, faceModel: FaceModel = .sface2021dec) {
            counters = InMemoryAttemptCounters(clock: clock)
            bindings = InMemoryDeviceBindings(clock: clock)
            challenges = InMemoryLivenessChallenges(clock: clock)
            app = AppRecord(id: UUID(), name: "app", secretHash: [], secretRotatedAt: nil, modules: .initial, faceModel: faceModel,
                            matchThreshold: faceModel.defaultThreshold, liveness: .initial, deviceBinding: binding, deviceBindingPolicy: policy,
                            kioskApproval: KioskApprovalPolicy(), quotas: .initial, keepEnrollmentPhotos: false, createdAt: Date())
        }

        var flow: FaceLogin {
            let migrations = self.migrations
            return FaceLogin(admission: AdmitEverything(),
                             attempts: AttemptGuard(store: counters, rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 6),
                                                    addressRule: .init(throttleAfter: 100, throttleSeconds: 30, lockAfter: 0)),
                             bindings: bindings, users: users, challenges: challenges, matcher: matcher,
                             tokens: IdentityTokenIssuer(issuer: "https://facegate.test", key: signingKey, ttl: 300), kioskKeys: kiosks,
                             confirmationTTL: 120) {
                _, user, _, _ in migrations.record(user)
            }
        }

        func user(_ number: String) -> UUID { users.add(appId: app.id, employeeNumber: number) }

        func login(_ device: ClientDevice, _ probe: FaceLogin.Probe = .image(Data("photo".utf8)),
                   address: String = "198.51.100.7") async -> Result<FaceLogin.Answer, APIError> {
            var draft = TransactionDraft(appId: app.id, kind: "face.login")
            do {
                return .success(try await flow.login(app: app, device: device, clientAddress: address, probe: { probe }, draft: &draft))
            } catch let error as APIError {
                return .failure(error)
            } catch {
                return .failure(APIError(.internalError, "\(error)"))
            }
        }

        func confirm(_ device: ClientDevice, _ confirmationId: UUID, _ number: String, ticket: String? = nil,
                     address: String = "198.51.100.7") async -> Result<FaceLogin.Answer, APIError> {
            var draft = TransactionDraft(appId: app.id, kind: "face.login.confirm")
            do {
                return .success(try await flow.confirm(app: app, device: device, clientAddress: address, confirmationId: confirmationId,
                                                       employeeNumber: number, bindingTicket: ticket, draft: &draft))
            } catch let error as APIError {
                return .failure(error)
            } catch {
                return .failure(APIError(.internalError, "\(error)"))
            }
        }

        /// The claims of a token this world's flow issued, checked as a relying party checks them.
        func claims(_ token: String) throws -> IdentityTokenClaims {
            try JWT.verify(token, as: IdentityTokenClaims.self, keys: JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey)]),
                           type: TokenType.identity, issuer: "https://facegate.test", audience: app.id.wire)
        }
    }

    static func match(_ user: UUID, _ distance: Float = 0.2) -> FaceJobResult {
        FaceJobResult(outcome: .match, candidates: [FaceCandidate(userId: user, templateId: UUID(), distance: distance)])
    }

    static let noMatch = FaceJobResult(outcome: .noMatchFace)

    let phone = ClientDevice(id: "phone-1", isKey: false)

    @Test func aMatchOnANewDeviceAsksToConfirmAndTheRightNumberBindsIt() async throws {
        let world = World()
        let alice = world.user("E1001")
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired(let confirmation)) = await world.login(phone) else { Issue.record("not asked to confirm"); return }
        #expect(world.matcher.jobs.map(\.kind) == [.identify])

        guard case .failure(let wrong) = await world.confirm(phone, confirmation, "E9999") else { Issue.record("a wrong number bound"); return }
        #expect(wrong.code == .employeeNumberMismatch && wrong.message.hasSuffix("4 tries left"))
        // The same confirmation from another device is unknown to that device.
        guard case .failure(let elsewhere) = await world.confirm(ClientDevice(id: "phone-2", isKey: false), confirmation, "E1001") else {
            Issue.record("another device used the confirmation"); return
        }
        #expect(elsewhere.code == .confirmationInvalid)

        guard case .success(.success(let token, let user)) = await world.confirm(phone, confirmation, " E1001 ") else {
            Issue.record("the right number did not bind"); return
        }
        #expect(user == alice)
        let claims = try world.claims(token)
        #expect(claims.sub == alice.wire && claims.method == "face" && claims.deviceId == "phone-1" && claims.cnf == nil)
        // Single use.
        guard case .failure(let again) = await world.confirm(phone, confirmation, "E1001") else { Issue.record("confirmed twice"); return }
        #expect(again.code == .confirmationInvalid)

        // The bound device now logs straight in.
        world.matcher.answer(Self.match(alice))
        guard case .success(.success(_, let next)) = await world.login(phone) else { Issue.record("the bound device was not let in"); return }
        #expect(next == alice)
    }

    @Test func fiveWrongNumbersVoidTheConfirmationAndCountAgainstTheFacesUser() async throws {
        let world = World()
        let alice = world.user("E1001")
        _ = world.user("E2002")
        var codes: [ErrorCode] = []
        // Each guess from a new device and address: the count that stops it is the victim's binding count.
        for attempt in 0..<4 {
            let device = ClientDevice(id: "attacker-\(attempt)", isKey: false)
            world.matcher.answer(Self.match(alice))
            guard case .success(.confirmRequired(let confirmation)) = await world.login(device, address: "203.0.113.\(attempt)") else {
                Issue.record("not asked to confirm"); return
            }
            guard case .failure(let error) = await world.confirm(device, confirmation, "E2002", address: "203.0.113.\(attempt)") else {
                Issue.record("a wrong number bound"); return
            }
            codes.append(error.code)
        }
        #expect(codes == [.employeeNumberMismatch, .employeeNumberMismatch, .employeeNumberMismatch, .rateLimited])

        let other = World()
        let bob = other.user("E1001")
        other.matcher.answer(Self.match(bob))
        guard case .success(.confirmRequired(let confirmation)) = await other.login(phone) else { Issue.record("not asked to confirm"); return }
        var messages: [String] = []
        for attempt in 0..<5 {
            if attempt >= 3 { other.clock.advance(seconds: 31) }  // the device's own wait after three failures
            if case .failure(let error) = await other.confirm(phone, confirmation, "E0000") { messages.append(error.message) }
        }
        #expect(messages.last == "the employee number does not match the face; the confirmation is now void, log in again")
        other.clock.advance(seconds: 31)
        guard case .failure(let void) = await other.confirm(phone, confirmation, "E1001") else { Issue.record("a void confirmation bound"); return }
        #expect(void.code == .confirmationInvalid)
    }

    @Test func failuresThrottleThenLockTheDeviceAndAThrottledDeviceReachesNoMatcher() async throws {
        let world = World()
        _ = world.user("E1001")
        for _ in 0..<3 {
            world.matcher.answer(Self.noMatch)
            guard case .failure(let error) = await world.login(phone) else { Issue.record("a stranger got in"); return }
            #expect(error.code == .noMatchFace)
        }
        guard case .failure(let throttled) = await world.login(phone) else { Issue.record("not throttled"); return }
        #expect(throttled.code == .rateLimited && throttled.retryAfter == 30)
        #expect(world.matcher.jobs.count == 3)
        // Another device is not held back by this one.
        world.matcher.answer(Self.noMatch)
        guard case .failure(let other) = await world.login(ClientDevice(id: "phone-2", isKey: false)) else { Issue.record("a stranger got in"); return }
        #expect(other.code == .noMatchFace)

        world.clock.advance(seconds: 30)
        for _ in 0..<3 {
            world.matcher.answer(Self.noMatch)
            _ = await world.login(phone)
            world.clock.advance(seconds: 30)
        }
        guard case .failure(let locked) = await world.login(phone) else { Issue.record("not locked"); return }
        #expect(locked.code == .credentialLocked)
        try await world.flow.attempts.reset(appId: world.app.id, .device(phone.id))
        world.matcher.answer(Self.noMatch)
        guard case .failure(let open) = await world.login(phone) else { Issue.record("a stranger got in"); return }
        #expect(open.code == .noMatchFace)
    }

    @Test func anOutageOrAFacelessPhotoCostsNothing() async throws {
        let world = World()
        for _ in 0..<5 {
            guard case .failure(let error) = await world.login(phone) else { Issue.record("answered without a matcher"); return }
            #expect(error.code == .serviceUnavailable)
        }
        for _ in 0..<5 {
            world.matcher.answer(FaceJobResult(outcome: .noFace))
            guard case .failure(let error) = await world.login(phone) else { Issue.record("no face, yet an answer"); return }
            #expect(error.code == .noFace)
        }
        world.matcher.answer(Self.noMatch)
        guard case .failure(let counted) = await world.login(phone) else { Issue.record("a stranger got in"); return }
        #expect(counted.code == .noMatchFace)
    }

    @Test func aBoundKeyIsVerifiedOneToOneBeforeAnySearch() async throws {
        var world = World(binding: .dpop, policy: .appServerTicket, faceModel: .dlibResNetV1)
        world.app.matchThreshold = 0.5
        let alice = world.user("E1001")
        let key = ClientDevice(id: "thumbprint-alice", isKey: true)
        // Bound the way the confirm call binds: an app-server ticket for the first key.
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired(let confirmation)) = await world.login(key) else { Issue.record("not asked to confirm"); return }
        guard case .failure(let missing) = await world.confirm(key, confirmation, "E1001") else { Issue.record("bound without a ticket"); return }
        #expect(missing.code == .bindingTicketInvalid)
        try await world.bindings.issueTicket(key: BindingTicketCheck.key("fbt_a"), appId: world.app.id, user: alice, issuer: "appServer", ttlSeconds: 60)
        // The refusal spent that confirmation: the ticket binds on a new one.
        guard case .failure(let spent) = await world.confirm(key, confirmation, "E1001", ticket: "fbt_a") else { Issue.record("a spent confirmation bound"); return }
        #expect(spent.code == .confirmationInvalid)
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired(let again)) = await world.login(key) else { Issue.record("not asked to confirm"); return }
        guard case .success(.success(let first, _)) = await world.confirm(key, again, "E1001", ticket: "fbt_a") else {
            Issue.record("the ticket did not bind"); return
        }
        let claims = try world.claims(first)
        #expect(claims.cnf?.jkt == "thumbprint-alice" && claims.amr == ["face", "swk"])

        let before = world.matcher.jobs.count
        world.matcher.answer(Self.match(alice, 0.3))
        guard case .success(.success(_, let user)) = await world.login(key) else { Issue.record("the bound key was not let in"); return }
        #expect(user == alice)
        // One job, so one embedding: an identify that compares the key's users 1:1 first.
        let job = try #require(world.matcher.jobs.last)
        guard case .identify = job.payload, job.boundUsers == [alice] else { Issue.record("alice's key was not compared with alice first: \(job.payload)"); return }
        #expect(world.matcher.jobs.count == before + 1)
        // A confident match of a dlib app's user re-enrolls them for the newer model; a close call does not.
        #expect(world.migrations.all == [alice])
        world.matcher.answer(Self.match(alice, 0.47))
        _ = await world.login(key)
        #expect(world.migrations.all.count == 1)
    }

    /// The ticket is checked before the number is looked at: without a valid one, a right and a wrong number get the same
    /// answer and the confirmation is spent; a valid ticket for someone else is a wrong number, like any other.
    @Test func aConfirmationChecksItsTicketFirstAndTellsNoNumberFromAnother() async throws {
        let key = ClientDevice(id: "thumbprint-attacker", isKey: true)
        var answers: [String] = []
        for (number, ticket) in [("E1001", nil), ("E7777", nil), ("E1001", "fbt_forged"), ("E7777", "fbt_forged")] as [(String, String?)] {
            let world = World(binding: .dpop, policy: .appServerTicket)
            world.matcher.answer(Self.match(world.user("E1001")))
            guard case .success(.confirmRequired(let confirmation)) = await world.login(key) else { Issue.record("not asked to confirm"); return }
            guard case .failure(let refused) = await world.confirm(key, confirmation, number, ticket: ticket) else { Issue.record("bound"); return }
            answers.append(refused.code.rawValue + "|" + refused.message)
            guard case .failure(let spent) = await world.confirm(key, confirmation, "E1001") else { Issue.record("bound"); return }
            #expect(spent.code == .confirmationInvalid, "the refused confirmation is spent")
        }
        #expect(Set(answers.map { $0.split(separator: "|")[0] }) == ["BINDING_TICKET_INVALID"])
        #expect(answers[0] == answers[1] && answers[2] == answers[3], "the same words for a right and a wrong number")
        // Bob's genuine ticket with alice's face and either number: a mismatch, and nothing bound.
        let world = World(binding: .dpop, policy: .appServerTicket)
        let alice = world.user("E1001")
        let bob = world.user("E1002")
        try await world.bindings.issueTicket(key: BindingTicketCheck.key("fbt_bob"), appId: world.app.id, user: bob, issuer: "appServer", ttlSeconds: 60)
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired(let confirmation)) = await world.login(key) else { Issue.record("not asked to confirm"); return }
        for number in ["E1001", "E1002"] {
            guard case .failure(let refused) = await world.confirm(key, confirmation, number, ticket: "fbt_bob") else { Issue.record("bound"); return }
            #expect(refused.code == .employeeNumberMismatch)
        }
        #expect(try await world.bindings.boundUsers(appId: world.app.id, device: key).isEmpty)
    }

    /// An address's failures are not cleared by someone else's success: an attacker who logs in as themselves between
    /// guesses is throttled all the same.
    @Test func anAddressIsNotClearedByAnotherLoginsSuccess() async throws {
        let world = World()
        let flow = FaceLogin(admission: AdmitEverything(),
                             attempts: AttemptGuard(store: world.counters, rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 6),
                                                    addressRule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 0, failureWindow: 600)),
                             bindings: world.bindings, users: world.users, challenges: world.challenges, matcher: world.matcher,
                             tokens: IdentityTokenIssuer(issuer: "https://facegate.test", key: world.signingKey, ttl: 300), kioskKeys: world.kiosks,
                             confirmationTTL: 120) { _, _, _, _ in }
        let mine = world.user("E1001")
        let own = ClientDevice(id: "attacker-own-phone", isKey: false)
        let pending = PendingConfirmation(appId: world.app.id, deviceId: own.id, userId: mine, candidates: [.init(userId: mine, distance: 0.2)],
                                          transactionId: UUID(), score: 0.2, ttlSeconds: 60)
        try await world.bindings.open(pending)
        try await world.bindings.bind(confirmation: pending.id, appId: world.app.id, device: own, user: mine, ticket: nil)
        func attempt(_ device: String, _ answer: FaceJobResult) async -> ErrorCode? {
            world.matcher.answer(answer)
            var draft = TransactionDraft(appId: world.app.id, kind: "face.login")
            do {
                _ = try await flow.login(app: world.app, device: ClientDevice(id: device, isKey: false), clientAddress: "203.0.113.5",
                                         probe: { .image(Data("photo".utf8)) }, draft: &draft)
                return nil
            } catch let error as APIError {
                return error.code
            } catch {
                return .internalError
            }
        }
        // A stranger's face from a fresh device each time, the attacker's own login in between: the third failure still
        // throttles the address (consecutive counting would have started again after each success).
        for guess in 0..<3 {
            #expect(await attempt("stranger-\(guess)", Self.noMatch) == .noMatchFace)
            if guess < 2 { #expect(await attempt(own.id, Self.match(mine)) == nil) }
        }
        #expect(await attempt("stranger-3", Self.noMatch) == .rateLimited)
        #expect(await attempt(own.id, Self.match(mine)) == .rateLimited, "the whole address waits")
    }

    /// A registered kiosk's key is never bound to a user, even with the right number and face.
    @Test func aKioskKeyIsNeverBound() async throws {
        let world = World(binding: .dpop)
        let alice = world.user("E1001")
        let kiosk = ClientDevice(id: "thumbprint-kiosk", isKey: true)
        world.kiosks.register(appId: world.app.id, jkt: kiosk.id)
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired(let confirmation)) = await world.login(kiosk) else { Issue.record("not asked to confirm"); return }
        guard case .failure(let refused) = await world.confirm(kiosk, confirmation, "E1001") else { Issue.record("a kiosk key was bound"); return }
        #expect(refused.code == .forbidden)
        #expect(try await world.bindings.boundUsers(appId: world.app.id, device: kiosk).isEmpty)
    }

    @Test func anUnboundKeyIsAlwaysAskedToConfirmAndTheAnswerNamesNoOne() async throws {
        let world = World(binding: .dpop)
        let alice = world.user("E1001")
        let key = ClientDevice(id: "thumbprint-new", isKey: true)
        world.matcher.answer(Self.noMatch)
        guard case .success(.confirmRequired(let stranger)) = await world.login(key) else { Issue.record("a no-match was not asked to confirm"); return }
        // Nobody was within the threshold: no number can bind it.
        guard case .failure(let refused) = await world.confirm(key, stranger, "E1001") else { Issue.record("bound a stranger"); return }
        #expect(refused.code == .employeeNumberMismatch)

        let near = FaceJobResult(outcome: .ambiguousMatch, candidates: [
            FaceCandidate(userId: UUID(), templateId: UUID(), distance: 0.30),
            FaceCandidate(userId: alice, templateId: UUID(), distance: 0.33),
        ])
        world.matcher.answer(near)
        guard case .success(.confirmRequired(let confirmation)) = await world.login(key) else { Issue.record("not asked to confirm"); return }
        guard case .success(.success(_, let user)) = await world.confirm(key, confirmation, "E1001") else { Issue.record("the claim did not bind"); return }
        #expect(user == alice)
    }

    @Test func aBurstSpendsItsChallengeAndCarriesItsActionsToTheMatcher() async throws {
        var world = World()
        world.app.liveness.faceLogin = .active
        let alice = world.user("E1001")
        let frames = [Data("f1".utf8), Data("f2".utf8)]
        try await world.challenges.issue("lc_1", appId: world.app.id, deviceId: phone.id, actions: [.turnLeft, .turnRight], ttlSeconds: 120)
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired) = await world.login(phone, .burst(challengeId: "lc_1", frames: frames)) else {
            Issue.record("a live burst was not identified"); return
        }
        let job = try #require(world.matcher.jobs.last)
        #expect(job.payload == .liveness(FaceJob.Burst(frames: frames, actions: [.turnLeft, .turnRight], identify: true)))

        // The same challenge again, or a spoof verdict, is a failed attempt.
        guard case .failure(let replay) = await world.login(phone, .burst(challengeId: "lc_1", frames: frames)) else { Issue.record("replayed"); return }
        #expect(replay.code == .spoofDetected)
        try await world.challenges.issue("lc_2", appId: world.app.id, deviceId: phone.id, actions: [.blink], ttlSeconds: 120)
        world.matcher.answer(FaceJobResult(outcome: .spoofDetected, liveness: LivenessReport(passed: false, reasons: ["no blink"])))
        guard case .failure(let spoof) = await world.login(phone, .burst(challengeId: "lc_2", frames: [Data("f3".utf8), Data("f4".utf8)])) else {
            Issue.record("a spoof got in"); return
        }
        #expect(spoof.code == .spoofDetected)
        guard case .failure(let unknown) = await world.login(phone, .burst(challengeId: "lc_3", frames: frames)) else { Issue.record("unknown"); return }
        #expect(unknown.code == .spoofDetected)
        guard case .failure(let throttled) = await world.login(phone, .burst(challengeId: "lc_4", frames: frames)) else { Issue.record("not throttled"); return }
        #expect(throttled.code == .rateLimited)
    }

    /// The erasure of a user reaches the matchers by broadcast, a moment after the operator's call returns.
    @Test func aMatchWithAUserErasedMeanwhileIsNoMatch() async throws {
        let world = World()
        let alice = world.user("E1001")
        world.users.remove(alice)
        world.matcher.answer(Self.match(alice))
        guard case .failure(let error) = await world.login(phone) else { Issue.record("an erased user's face was let in"); return }
        #expect(error.code == .noMatchFace)

        let key = ClientDevice(id: "thumbprint-new", isKey: true)
        world.matcher.answer(Self.match(alice))
        guard case .success(.confirmRequired(let confirmation)) = await world.login(key) else { Issue.record("not asked to confirm"); return }
        guard case .failure(let refused) = await world.confirm(key, confirmation, "E1001") else { Issue.record("bound an erased user"); return }
        #expect(refused.code == .employeeNumberMismatch)
    }
}
