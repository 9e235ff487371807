import AppRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import IdentityRecords
import JWT
import Testing

/// `KioskLogin` over in-memory stores and a scripted matcher. The same flow with real bursts and the real models is
/// IntegrationTests' (LivenessTests, KioskOnboardingTests, ClientKioskTests).
@Suite struct KioskLoginUseCaseTests {
    struct World {
        let clock = FakeClock()
        let users = InMemoryUserDirectory()
        let sessions = InMemoryOnboardingSessions()
        let challenges: InMemoryLivenessChallenges
        let matcher = ScriptedMatcher()
        let flow: KioskLogin
        let kiosk: RegisteredKiosk
        let signingKey = JWTSigningKey(kid: "test", privateKey: Ed25519PrivateKey())
        var app: AppRecord

        init(liveness: LivenessMode = .active, allowance: Int = 1000) {
            challenges = InMemoryLivenessChallenges(clock: clock)
            let asked = Calls<UUID>()
            app = AppRecord(id: UUID(), name: "kiosk", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                            matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: LivenessPolicy(faceLogin: .off, kiosk: liveness),
                            deviceBinding: .header, deviceBindingPolicy: .employeeNumber, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                            keepEnrollmentPhotos: false, createdAt: Date())
            flow = KioskLogin(admission: AdmitEverything(),
                              attempts: AttemptGuard(store: InMemoryAttemptCounters(clock: clock),
                                                     rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 50),
                                                     addressRule: .init(throttleAfter: 100, throttleSeconds: 30, lockAfter: 0)),
                              users: users, sessions: sessions, challenges: challenges, matcher: matcher,
                              tokens: IdentityTokenIssuer(issuer: "https://facegate.test", key: signingKey, ttl: 300)) { kiosk in
                // The kiosk's rate allows `allowance` logins, then says to come back in 7 s.
                asked.record(kiosk)
                return (asked.all.count <= allowance, 7)
            }
            kiosk = RegisteredKiosk(id: UUID(), appId: app.id, name: "Lobby", jkt: "kiosk-1", createdAt: Date())
        }

        func login(_ probe: KioskLogin.Probe, draft: inout TransactionDraft) async throws -> KioskLogin.Answer {
            try await flow.login(app: app, kiosk: kiosk, probe: { probe }, draft: &draft)
        }

        func login(_ probe: KioskLogin.Probe) async throws -> KioskLogin.Answer {
            var draft = TransactionDraft(appId: app.id, kind: "kiosk.login")
            return try await login(probe, draft: &draft)
        }

        func challenge(_ id: String, _ actions: [LivenessAction] = [.turnLeft, .turnRight]) async throws -> KioskLogin.Probe {
            try await challenges.issue(id, appId: app.id, deviceId: "kiosk-1", actions: actions, ttlSeconds: 120)
            return KioskLogin.Probe(challengeId: id, frames: [Data("\(id)-1".utf8), Data("\(id)-2".utf8)])
        }
    }

    static func match(_ user: UUID) -> FaceJobResult {
        FaceJobResult(outcome: .match, candidates: [FaceCandidate(userId: user, templateId: UUID(), distance: 0.4)])
    }

    @Test func anOnboardedCustomerGetsAKioskTokenAndTheSessionIdNeverItsInterviewToken() async throws {
        let world = World()
        let customer = world.users.add(appId: world.app.id, employeeNumber: "K-1", name: "Ada Lovelace")
        let session = UUID()
        world.sessions.completed(session, onboarding: customer)
        world.matcher.answer(Self.match(customer))
        var draft = TransactionDraft(appId: world.app.id, kind: "kiosk.login")
        let answer = try await world.login(try await world.challenge("lc_1", [.blink, .turnLeft]), draft: &draft)
        guard case .identified(let user, let firstName, let token, let interviewId) = answer else { Issue.record("\(answer)"); return }
        #expect(user == customer && firstName == "Ada" && interviewId == session)
        #expect(draft.userId == customer && draft.detail["interviewId"] == session.wire)
        let claims = try JWT.verify(token, as: IdentityTokenClaims.self, keys: JWTKeySet([(kid: world.signingKey.kid, key: world.signingKey.publicKey)]),
                                    type: TokenType.identity, issuer: "https://facegate.test", audience: world.app.id.wire)
        #expect(claims.method == "kiosk" && claims.sub == customer.wire && claims.deviceId == "kiosk-1")
        // The kiosk's key is in `cnf`, the face is the only factor of the user.
        #expect(claims.cnf?.jkt == "kiosk-1" && claims.amr == ["face"] && claims.kioskId == world.kiosk.id.wire)
        let job = try #require(world.matcher.jobs.first)
        guard case .liveness(let burst) = job.payload else { Issue.record("not a liveness job"); return }
        #expect(burst.identify && burst.actions == [.blink, .turnLeft])
    }

    @Test func spoofsAndReplaysAreRefusedAnswersThatThrottleTheKiosk() async throws {
        let world = World()
        let probe = try await world.challenge("lc_1")
        world.matcher.answer(FaceJobResult(outcome: .spoofDetected, liveness: LivenessReport(passed: false, reasons: ["identical frames"])))
        var draft = TransactionDraft(appId: world.app.id, kind: "kiosk.login")
        #expect(try await world.login(probe, draft: &draft) == .refused(.spoofDetected, spoof: true))
        #expect(draft.outcome == "SPOOF_DETECTED" && draft.detail["spoofAttempt"] == "true" && draft.detail["spoofReasons"] == "identical frames")
        // The same challenge again never reaches a matcher.
        #expect(try await world.login(probe) == .refused(.spoofDetected, spoof: true))
        #expect(world.matcher.jobs.count == 1)
        world.matcher.answer(FaceJobResult(outcome: .spoofDetected, liveness: LivenessReport(passed: false, reasons: ["no blink"])))
        #expect(try await world.login(try await world.challenge("lc_2")) == .refused(.spoofDetected, spoof: true))
        do {
            _ = try await world.login(try await world.challenge("lc_3"))
            Issue.record("a fourth spoof in a row was not throttled")
        } catch let error as APIError {
            #expect(error.code == .rateLimited)
        }
    }

    /// Walk-ups who are not enrolled are what a kiosk sees all day: they neither throttle nor lock it. Its rate is its
    /// limit, and a kiosk past it is told when to come back.
    @Test func strangersCostTheKioskOnlyItsRate() async throws {
        let world = World(allowance: 30)
        for attempt in 0..<30 {
            world.matcher.answer(FaceJobResult(outcome: .noMatchFace))
            #expect(try await world.login(try await world.challenge("lc_\(attempt)")) == .refused(.noMatchFace, spoof: false))
        }
        do {
            _ = try await world.login(try await world.challenge("lc_over"))
            Issue.record("a kiosk past its rate was let in")
        } catch let error as APIError {
            #expect(error.code == .rateLimited && error.retryAfter == 7)
        }
        #expect(world.matcher.jobs.count == 30)
    }

    @Test func aNonImageFrameCostsNothingAndLivenessOffIdentifiesTheFirstFrame() async throws {
        let world = World(liveness: .off)
        let customer = world.users.add(appId: world.app.id, employeeNumber: "K-1")
        for _ in 0..<5 {
            var draft = TransactionDraft(appId: world.app.id, kind: "kiosk.login")
            let answer = try await world.flow.login(app: world.app, kiosk: world.kiosk,
                                                    probe: { throw APIError(.imageFormatError, "frame 0 is not a JPEG or PNG file") },
                                                    draft: &draft)
            #expect(answer == .refused(.imageFormatError, spoof: false))
        }
        world.matcher.answer(Self.match(customer))
        let selfie = KioskLogin.Probe(challengeId: nil, frames: [Data("selfie".utf8)])
        guard case .identified(_, _, _, let interviewId) = try await world.login(selfie) else { Issue.record("not identified"); return }
        #expect(interviewId == nil)
        #expect(world.matcher.jobs.first?.kind == .identify && world.matcher.jobs.first?.image == Data("selfie".utf8))
    }

    @Test func aMatchWithACustomerErasedMeanwhileIsNoMatch() async throws {
        let world = World()
        let customer = world.users.add(appId: world.app.id, employeeNumber: "K-1")
        world.users.remove(customer)
        world.matcher.answer(Self.match(customer))
        #expect(try await world.login(try await world.challenge("lc_1")) == .refused(.noMatchFace, spoof: false))
    }
}
