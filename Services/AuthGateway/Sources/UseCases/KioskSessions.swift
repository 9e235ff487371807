import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import KioskSessionRecords
import ServiceKit

/// Sends a command to the kiosk-orchestrator, which owns the sessions, and answers its view of the session after it.
protocol KioskCommands: Sendable {
    func send(_ command: KioskCommand) async throws -> KioskSessionView
}

/// The kiosk sessions as the gateway reads them (`KioskSessionStore`).
protocol KioskSessionReads: Sendable {
    /// The session, whichever app it belongs to (its interview token or event ticket is the proof).
    func session(_ id: UUID) async throws -> KioskSession?
    func view(of session: KioskSession) async throws -> KioskSessionView
}

/// Kiosk onboarding sessions from the gateway's side (`/v1/kiosk/sessions…`), without HTTP: the orchestrator decides
/// every step; this checks what the gateway answers for — the kiosk module, the interview token, the liveness
/// challenge of an app whose kiosk liveness is active, how long a finished session stays readable — and issues the
/// single-use tickets that open a session's event stream.
struct KioskSessions: Sendable {
    let admission: any ModuleAdmission
    let commands: any KioskCommands
    let sessions: any KioskSessionReads
    let challenges: any LivenessChallengeStore
    let tickets: any KioskEventTicketStore
    let interviewTokens: InterviewTokens

    /// How long after its session's end an interview token still reads the session and its events, so the kiosk can
    /// show how it ended; after that the token is dead.
    static let interviewReadGrace: TimeInterval = 600
    static let eventTicketSeconds = 60

    /// A registered kiosk at a step: the app, the kiosk's key (its device), the kiosk, its address.
    struct Caller: Sendable {
        var app: AppRecord
        var device: String
        var kioskId: UUID?
        var clientIp: String?
    }

    /// A new session at the selfie step and its interview token (`X-Interview-Token` on every later call).
    func create(_ caller: Caller) async throws -> KioskSessionCreated {
        try await admission.admit(caller.app, module: .kiosk)
        let id = UUID()
        let token = interviewTokens.token(for: id)
        let view = try await commands.send(KioskCommand(sessionId: id, appId: caller.app.id, deviceId: caller.device, kioskId: caller.kioskId,
                                                        clientIp: caller.clientIp,
                                                        .create(tokenHash: Data(SHA256.hash(Array(token.utf8))))))
        return KioskSessionCreated(interviewId: id.wire, interviewToken: token, expiresIn: max(0, Int(view.expiresAt.timeIntervalSinceNow.rounded())))
    }

    /// The selfie: frames answering a liveness challenge when the app's kiosk liveness is active (the challenge is spent
    /// here), else one still. `burst` is read after the module is admitted.
    func selfie(_ caller: Caller, session id: UUID, burst: () throws -> (challengeId: String?, frames: [Data])) async throws -> KioskSessionView {
        try await admission.admit(caller.app, module: .kiosk)
        let (challengeId, frames) = try burst()
        var actions: [LivenessAction]?
        if caller.app.liveness.kiosk == .active {
            guard let challengeId else {
                throw APIError(.invalidRequest, "the challengeId field is missing; get one from GET /v1/liveness/challenges")
            }
            actions = try await challenges.consume(challengeId, appId: caller.app.id, deviceId: caller.device, frames: frames)
        }
        return try await commands.send(KioskCommand(sessionId: id, appId: caller.app.id, deviceId: caller.device, clientIp: caller.clientIp,
                                                    .selfie(frames: frames, actions: actions)))
    }

    /// A photo of the document's front (or with `back` its back), read after the module is admitted.
    func document(_ caller: Caller, session id: UUID, back: Bool, image: () throws -> Data) async throws -> KioskSessionView {
        try await admission.admit(caller.app, module: .kiosk)
        let image = try image()
        return try await commands.send(KioskCommand(sessionId: id, appId: caller.app.id, deviceId: caller.device, clientIp: caller.clientIp,
                                                    back ? .idBack(image: image) : .idFront(image: image)))
    }

    func cancel(_ id: UUID, clientIp: String?) async throws {
        guard let session = try await sessions.session(id) else { throw APIError(.notFound, "no such kiosk session") }
        _ = try await commands.send(KioskCommand(sessionId: id, appId: session.appId, clientIp: clientIp, .cancel))
    }

    /// The session while its interview token is valid: `NOT_FOUND` for none, `SESSION_EXPIRED` once it ended more than
    /// `interviewReadGrace` ago.
    func live(_ id: UUID, now: Date = Date()) async throws -> KioskSession {
        guard let session = try await sessions.session(id) else { throw APIError(.notFound, "no such kiosk session") }
        guard session.expiresAt.addingTimeInterval(Self.interviewReadGrace) > now else {
            throw APIError(.sessionExpired, "the kiosk session has expired, and its interview token with it")
        }
        return session
    }

    /// A single-use ticket that opens the event stream once, for browsers' `EventSource`, which cannot send the interview
    /// token as a header (tokens never travel in a URL).
    func eventTicket(_ id: UUID) async throws -> (ticket: String, expiresIn: Int) {
        let session = try await live(id)
        let ticket = "kt_" + Base64URL.encode(SecureRandom.bytes(24))
        try await tickets.issue(ticket, appId: session.appId, session: session.id, ttlSeconds: Self.eventTicketSeconds)
        return (ticket, Self.eventTicketSeconds)
    }

    /// Opens the stream with a ticket instead of the token: spends it, once, for its session only.
    func openWithTicket(_ ticket: String, session id: UUID) async throws {
        guard try await sessions.session(id) != nil, try await tickets.spend(ticket, session: id) else {
            throw APIError(.unauthorized, "the event ticket is unknown, spent or expired; ask POST …/event-tickets for a new one")
        }
    }
}
