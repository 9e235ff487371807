import AppRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import IdentityRecords
import KioskSessionRecords
import ServiceKit
import Synchronization
import Testing

/// `KioskSessions` over in-memory sessions, challenges and tickets and a recording orchestrator: what the gateway checks
/// before a command goes out, and what it sends. The orchestrator's own rules, on real documents and photos, are
/// IntegrationTests' KioskFlowTests and KioskOnboardingTests.
@Suite struct KioskSessionsUseCaseTests {
    /// Answers every command with a session at the selfie step, expiring in ten minutes, and keeps the commands.
    final class RecordedCommands: KioskCommands {
        let sent = Calls<KioskCommand>()
        func send(_ command: KioskCommand) async throws -> KioskSessionView {
            sent.record(command)
            return KioskSessionView(interviewId: command.sessionId, state: .selfie, steps: [], result: nil, expiresAt: Date().addingTimeInterval(600))
        }
    }

    final class Sessions: KioskSessionReads {
        let rows = Mutex<[UUID: KioskSession]>([:])
        func add(_ session: KioskSession) { rows.withLock { $0[session.id] = session } }
        func session(_ id: UUID) async throws -> KioskSession? { rows.withLock { $0[id] } }
        func view(of session: KioskSession) async throws -> KioskSessionView {
            KioskSessionView(interviewId: session.id, state: session.state, steps: [], result: nil, expiresAt: session.expiresAt)
        }
    }

    struct RefuseKiosk: ModuleAdmission {
        func admit(_ app: AppRecord, module: Module) async throws {
            if module == .kiosk { throw APIError(.moduleDisabled, "kiosk is disabled") }
        }
    }

    let clock = FakeClock()
    let commands = RecordedCommands()
    let sessions = Sessions()
    let challenges: InMemoryLivenessChallenges
    let tickets: InMemoryKioskEventTickets
    let tokens = try! InterviewTokens(signingSeed: SecureRandom.bytes(32))

    init() {
        challenges = InMemoryLivenessChallenges(clock: clock)
        tickets = InMemoryKioskEventTickets(clock: clock)
    }

    func steps(admission: any ModuleAdmission = AdmitEverything()) -> KioskSessions {
        KioskSessions(admission: admission, commands: commands, sessions: sessions, challenges: challenges, tickets: tickets, interviewTokens: tokens)
    }

    func caller(liveness: LivenessMode = .off) -> KioskSessions.Caller {
        KioskSessions.Caller(app: AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                                            matchThreshold: 1.0, liveness: LivenessPolicy(faceLogin: .off, kiosk: liveness), deviceBinding: .dpop,
                                            deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                                            keepEnrollmentPhotos: false, createdAt: Date()),
                             device: "kiosk-1", clientIp: "10.0.0.7")
    }

    @Test func aSessionIsCreatedByTheOrchestratorWithTheHashOfItsOwnInterviewToken() async throws {
        let kiosk = caller()
        let created = try await steps().create(kiosk)
        let id = try #require(UUID(uuidString: created.interviewId))
        #expect(tokens.isValid(created.interviewToken, for: id) && !tokens.isValid(created.interviewToken, for: UUID()))
        #expect((598...600).contains(created.expiresIn ?? 0))
        let command = try #require(commands.sent.all.first)
        #expect(command.sessionId == id && command.appId == kiosk.app.id && command.deviceId == "kiosk-1" && command.clientIp == "10.0.0.7")
        #expect(command.payload == .create(tokenHash: Data(SHA256.hash(Array(created.interviewToken.utf8)))))
        // A kiosk module that is off sends nothing, and reads no photo.
        #expect(await errorCode { try await steps(admission: RefuseKiosk()).create(kiosk) } == .moduleDisabled)
        let read = Calls<String>()
        #expect(await errorCode {
            try await steps(admission: RefuseKiosk()).document(kiosk, session: id, back: false) {
                read.record("image")
                return Data([1])
            }
        } == .moduleDisabled)
        #expect(commands.sent.all.count == 1 && read.all.isEmpty)
    }

    @Test func aSelfieAnswersTheAppsLivenessChallengeOrIsOneStill() async throws {
        let id = UUID()
        let live = caller(liveness: .active)
        let frames = [Data([1]), Data([2])]
        #expect(await errorCode { try await steps().selfie(live, session: id) { (nil, frames) } } == .invalidRequest)
        try await challenges.issue("lc_1", appId: live.app.id, deviceId: "kiosk-1", actions: [.turnLeft, .turnRight], ttlSeconds: 120)
        _ = try await steps().selfie(live, session: id) { ("lc_1", frames) }
        let sent = try #require(commands.sent.all.last)
        #expect(sent.payload == .selfie(frames: frames, actions: [.turnLeft, .turnRight]) && sent.sessionId == id)
        #expect(await errorCode { try await steps().selfie(live, session: id) { ("lc_1", [Data([3])]) } } == .spoofDetected, "spent")
        // Liveness off: one still, no challenge asked for or spent.
        _ = try await steps().selfie(caller(), session: id) { (nil, [Data([4])]) }
        #expect(commands.sent.all.last?.payload == .selfie(frames: [Data([4])], actions: nil))
    }

    @Test func aFinishedSessionStaysReadableForItsGraceThenItsTokenIsDead() async throws {
        let ended = KioskSession(id: UUID(), appId: UUID(), deviceId: "kiosk-1", state: .completed, data: KioskSessionData(),
                                 expiresAt: Date().addingTimeInterval(-599))
        sessions.add(ended)
        #expect(try await steps().live(ended.id).id == ended.id)
        #expect(await errorCode { try await steps().live(ended.id, now: Date().addingTimeInterval(2)) } == .sessionExpired)
        #expect(await errorCode { try await steps().live(UUID()) } == .notFound)
        #expect(await errorCode { try await steps().cancel(UUID(), clientIp: nil) } == .notFound)
    }

    @Test func anEventTicketOpensItsSessionsStreamOnce() async throws {
        let session = KioskSession(id: UUID(), appId: UUID(), deviceId: "kiosk-1", state: .idFront, data: KioskSessionData(),
                                   expiresAt: Date().addingTimeInterval(300))
        let other = KioskSession(id: UUID(), appId: session.appId, deviceId: "kiosk-2", state: .selfie, data: KioskSessionData(),
                                 expiresAt: Date().addingTimeInterval(300))
        sessions.add(session)
        sessions.add(other)
        let (ticket, expiresIn) = try await steps().eventTicket(session.id)
        #expect(ticket.hasPrefix("kt_") && expiresIn == 60)
        #expect(await errorCode { try await steps().openWithTicket(ticket, session: other.id) } == .unauthorized)
        try await steps().openWithTicket(ticket, session: session.id)
        #expect(await errorCode { try await steps().openWithTicket(ticket, session: session.id) } == .unauthorized, "spent")
        let late = try await steps().eventTicket(session.id).ticket
        clock.advance(seconds: 61)
        #expect(await errorCode { try await steps().openWithTicket(late, session: session.id) } == .unauthorized, "expired")
    }
}
