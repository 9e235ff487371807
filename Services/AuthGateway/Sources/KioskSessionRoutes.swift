import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit
import Synchronization

/// Kiosk onboarding sessions. The kiosk-orchestrator owns them: every step is a command on
/// `kiosk.commands.v1` keyed by session and answered with the session after it. The gateway checks the
/// caller (a DPoP proof by the registered kiosk that opened the session, `X-Interview-Token`, and on creation and
/// uploads the access token), consumes liveness challenges, and serves the session and its events from PostgreSQL.
extension GatewayContext {
    func registerKioskSessionRoutes(on router: APIRoutes) {
        router.group(client).add("POST", "/v1/kiosk/sessions", answers: [KioskSessionCreated.self], doors: [.kioskOnboarding], maxBodyBytes: 4096) { [self] request, app in
            try await createKioskSession(request, app: app)
        }
        let interviews = router.group(interview)
        interviews.add("GET", "/v1/kiosk/sessions/{interviewId}", answers: [KioskSessionView.self], doors: [.kioskOnboarding]) { [self] request, id in try await kioskSession(request, id) }
        interviews.add("DELETE", "/v1/kiosk/sessions/{interviewId}", answers: [], doors: [.kioskOnboarding]) { [self] request, id in try await cancelKioskSession(request, id: id) }
        interviews.add("POST", "/v1/kiosk/sessions/{interviewId}/event-tickets", answers: [EventTicket.self], doors: [.kioskOnboarding],
                       maxBodyBytes: 1024) { [self] request, id in
            try await kioskEventTicket(request, id)
        }
        router.group(interviewOrEventTicket).add("GET", "/v1/kiosk/sessions/{interviewId}/events", answers: [], doors: [.kioskOnboarding]) { [self] request, id in
            try await kioskEvents(request, id: id)
        }
        let steps = router.group(kioskStep)
        steps.add("POST", "/v1/kiosk/sessions/{interviewId}/selfie", answers: [KioskSessionView.self], doors: [.kioskOnboarding], upload: true) { [self] request, step in try await kioskSelfie(request, step) }
        steps.add("POST", "/v1/kiosk/sessions/{interviewId}/id-front", answers: [KioskSessionView.self], doors: [.kioskOnboarding], upload: true) { [self] request, step in
            try await kioskDocument(request, step, back: false)
        }
        steps.add("POST", "/v1/kiosk/sessions/{interviewId}/id-back", answers: [KioskSessionView.self], doors: [.kioskOnboarding], upload: true) { [self] request, step in
            try await kioskDocument(request, step, back: true)
        }
    }

    var kioskSessions: KioskSessionStore { KioskSessionStore(database: database) }

    var kioskSessionFlow: KioskSessions {
        KioskSessions(admission: apps, commands: self, sessions: self, challenges: livenessChallenges, tickets: kioskEventTickets,
                      interviewTokens: interviewTokens)
    }

    func createKioskSession(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let kiosk = try await provenKiosk(request, app: app)
        let caller = KioskSessions.Caller(app: app, device: kiosk.jkt, kioskId: kiosk.id, clientIp: clientAddress(request))
        return .json(try await kioskSessionFlow.create(caller), status: 201)
    }

    func kioskSelfie(_ request: HTTPRequest, _ step: KioskStepCaller) async throws -> HTTPResponse {
        let caller = try await stepCaller(request, step)
        return .json(try await kioskSessionFlow.selfie(caller, session: step.interviewId) {
            try livenessFrames(from: request, challengeRequired: step.app.liveness.kiosk == .active)
        })
    }

    func kioskDocument(_ request: HTTPRequest, _ step: KioskStepCaller, back: Bool) async throws -> HTTPResponse {
        let caller = try await stepCaller(request, step)
        return .json(try await kioskSessionFlow.document(caller, session: step.interviewId, back: back) { Data(try image(request)) })
    }

    func cancelKioskSession(_ request: HTTPRequest, id: UUID) async throws -> HTTPResponse {
        let session = try await kioskSessionFlow.live(id)
        _ = try await provenKiosk(request, session: session)
        try await kioskSessionFlow.cancel(id, clientIp: clientAddress(request))
        return HTTPResponse(status: 204)
    }

    /// The session and its result, whose token only the kiosk that opened it may read.
    func kioskSession(_ request: HTTPRequest, _ id: UUID) async throws -> HTTPResponse {
        let session = try await kioskSessionFlow.live(id)
        _ = try await provenKiosk(request, session: session)
        return .json(try await view(of: session))
    }

    func kioskEventTicket(_ request: HTTPRequest, _ id: UUID) async throws -> HTTPResponse {
        _ = try await provenKiosk(request, session: try await kioskSessionFlow.live(id))
        let (ticket, expiresIn) = try await kioskSessionFlow.eventTicket(id)
        return .json(EventTicket(ticket: ticket, expiresIn: expiresIn), status: 201)
    }

    /// Server-Sent Events: the session's step events from `Last-Event-ID` on, then new ones as they are
    /// committed (PostgreSQL polled every 300 ms), a comment every 15 s to keep proxies from closing the
    /// stream; it ends after a final event or when the session expires. Opened with `X-Interview-Token`
    /// or a ticket from `POST …/event-tickets` (`?ticket=`, spent on opening).
    func kioskEvents(_ request: HTTPRequest, id: UUID) async throws -> HTTPResponse {
        let session = try await kioskSessionFlow.live(id)
        // A ticket was issued to the proven kiosk (a browser's EventSource cannot sign); the token needs the kiosk's proof.
        if !Self.opensWithTicket(request) { _ = try await provenKiosk(request, session: session) }
        let lastEventId = request.headers["Last-Event-ID"] ?? request.query["lastEventId"] ?? "0"
        guard let after = Int(lastEventId), after >= 0 else { throw APIError(.invalidRequest, "Last-Event-ID must be an event id") }
        let slot = try eventStreams.take(for: clientAddress(request))
        let sessions = kioskSessions
        let logger = self.logger
        let appId = session.appId
        let cursor = Mutex(EventCursor(seq: after, expiresAt: session.expiresAt))
        let stream = AsyncStream<[UInt8]> {
            withExtendedLifetime(slot) {}  // the stream holds its slot until the response lets go of it
            if cursor.withLock({ $0.opened == false }) {
                cursor.withLock { $0.opened = true }
                return Array("retry: 2000\n\n".utf8)
            }
            while !Task.isCancelled {
                let (seq, finished, expiresAt, quietSince) = cursor.withLock { ($0.seq, $0.finished, $0.expiresAt, $0.lastWrite) }
                if finished { return nil }
                do {
                    // The stream runs after the handler returned, outside the request's scope.
                    let events = try await Tenant.run(app: appId) { try await sessions.events(of: id, after: seq, limit: 50) }
                    if !events.isEmpty {
                        cursor.withLock {
                            $0.seq = events.last!.seq
                            $0.finished = events.contains(where: \.isFinal)
                            $0.lastWrite = .now
                        }
                        return events.flatMap(Self.serverSentEvent)
                    }
                } catch {
                    logger.warning("kiosk event stream stopped", ["kiosk.session": id.wire, "error": "\(error)"])
                    return nil
                }
                if expiresAt < Date() { return nil }
                if ContinuousClock.now - quietSince > .seconds(15) {
                    cursor.withLock { $0.lastWrite = .now }
                    return Array(": keep-alive\n\n".utf8)
                }
                try? await Task.sleep(for: .milliseconds(300))
            }
            return nil
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
                                                   ("X-Accel-Buffering", "no")],
                            body: .stream(stream))
    }

    struct EventTicket: Encodable { var ticket: String; var expiresIn: Int }

    struct EventCursor: Sendable {
        var seq: Int
        var expiresAt: Date
        var opened = false
        var finished = false
        var lastWrite = ContinuousClock.now
    }

    static func serverSentEvent(_ event: KioskEvent) -> [UInt8] {
        let data = (try? FaceGateJSON.encode(event.data)) ?? Array("{}".utf8)
        return Array("id: \(event.seq)\nevent: \(event.event.rawValue)\ndata: ".utf8) + data + Array("\n\n".utf8)
    }

    // MARK: - Callers

    /// The session of the path, proven by its interview token (`requireInterview`).
    var interview: Authenticator<UUID> { Authenticator { [self] in try requireInterview($0) } }

    /// The interview token, or for the event stream a single-use ticket from `POST …/event-tickets` (`?ticket=`,
    /// spent here — so never for an upload route, whose authenticator runs twice).
    var interviewOrEventTicket: Authenticator<UUID> {
        Authenticator { [self] request in
            guard Self.opensWithTicket(request), let ticket = request.query["ticket"] else { return try requireInterview(request) }
            let id = try request.uuidParameter("interviewId")
            try await kioskSessionFlow.openWithTicket(ticket, session: id)
            return id
        }
    }

    /// The event stream is opened with a ticket (and no interview token): the ticket, not the token, is the proof.
    static func opensWithTicket(_ request: HTTPRequest) -> Bool {
        request.query["ticket"] != nil && request.headers["X-Interview-Token"] == nil
    }

    struct KioskStepCaller: Sendable {
        var app: AppRecord
        var interviewId: UUID
    }

    /// A step: the client app's access token and the session's interview token, checked before a photo is read.
    var kioskStep: Authenticator<KioskStepCaller> {
        Authenticator { [self] request in
            let app = try await requireClient(request)
            return KioskStepCaller(app: app, interviewId: try requireInterview(request))
        }
    }

    /// The caller of a step: the kiosk that opened the session, proven by its key (a DPoP proof is spent here, once).
    func stepCaller(_ request: HTTPRequest, _ step: KioskStepCaller) async throws -> KioskSessions.Caller {
        guard let session = try await kioskSessions.session(step.interviewId), session.appId == step.app.id else {
            throw APIError(.notFound, "no such kiosk session")
        }
        let kiosk = try await provenKiosk(request, app: step.app, session: session)
        return KioskSessions.Caller(app: step.app, device: kiosk.jkt, kioskId: kiosk.id, clientIp: clientAddress(request))
    }

    /// The session named in the path, proven by its interview token (`X-Interview-Token` only: a token in
    /// a URL ends up in logs and browser history).
    func requireInterview(_ request: HTTPRequest) throws -> UUID {
        let id = try request.uuidParameter("interviewId")
        guard let token = request.headers["X-Interview-Token"],
              interviewTokens.isValid(token, for: id) else {
            throw APIError(.unauthorized, "X-Interview-Token must be the token issued with this kiosk session")
        }
        return id
    }

}

extension GatewayContext: KioskCommands, KioskSessionReads {
    /// Sends a command to the orchestrator and answers its view of the session, or its refusal.
    func send(_ command: KioskCommand) async throws -> KioskSessionView {
        let reply: KioskCommandReply
        do {
            reply = try await requester.send(command, appId: command.appId, key: command.sessionId.wire)[0]
        } catch {
            logger.warning("kiosk command not answered", ["error": "\(error)", "kiosk.step": command.step.rawValue])
            throw APIError(.serviceUnavailable, "the kiosk service is unavailable right now; the session keeps its state, try again")
        }
        if let code = reply.error { throw APIError(code, reply.message ?? "the kiosk step was refused") }
        guard let session = reply.session else { throw APIError(.internalError, "the kiosk service answered without a session") }
        return session
    }

    /// A session named by its id alone (its interview token or event ticket proves the caller): found across apps, after
    /// which the request sees only the session's app.
    func session(_ id: UUID) async throws -> KioskSession? {
        guard let session = try await Tenant.acrossApps({ try await kioskSessions.session(id) }) else { return nil }
        Tenant.enter(app: session.appId)
        return session
    }

    func view(of session: KioskSession) async throws -> KioskSessionView { try await kioskSessions.view(of: session) }
}
