import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import KioskSessionRecords
import ServiceKit
import Synchronization

/// Kiosk onboarding sessions. The kiosk-orchestrator owns them: every step is a command on
/// `kiosk.commands.v1` keyed by session and answered with the session after it. The gateway checks the
/// caller (a DPoP proof by the registered kiosk that opened the session, `X-Interview-Token`, and on creation and
/// uploads the access token), consumes liveness challenges, and serves the session and its events from PostgreSQL.
struct KioskSessionRoutes: RouteCollection {
    let kioskSessions: KioskSessions
    let store: KioskSessionStore
    let kiosks: KioskProofs
    /// Open event streams, per client and in all (`FACEGATE_EVENT_STREAMS…`).
    let eventStreams: EventStreamSlots

    func boot(_ routes: APIRoutes) {
        let gate: [ErrorCode] = [.moduleDisabled, .moduleNotFormal, .kioskNotRegistered]
        routes.group(\.device, tag: .kiosk).add("POST", "/v1/kiosk/sessions", "createKioskSession", "Start a kiosk onboarding session (no body)",
                                                answers: [.created(KioskSessionCreated.self, "The session and its interview token")],
                                                errors: gate, doors: [.kioskOnboarding], maxBodyBytes: 4096) { _, context in
            let app = context.caller
            let kiosk = try await kiosks.proven(context, app: app)
            let caller = KioskSessions.Caller(app: app, device: kiosk.jkt, kioskId: kiosk.id, clientIp: context.clientAddress)
            return .json(try await kioskSessions.create(caller), status: 201)
        }
        let interviews = routes.group(\.interview, tag: .kiosk)
        // The session and its result, whose token only the kiosk that opened it may read.
        interviews.add("GET", "/v1/kiosk/sessions/{interviewId}", "getKioskSession", "The session: state, steps taken, result",
                       answers: [.ok(KioskSessionView.self, "The session")], errors: [.kioskNotRegistered], doors: [.kioskOnboarding]) { _, context in
            let session = try await kioskSessions.live(context.caller)
            _ = try await kiosks.proven(context, session: session)
            return .json(try await store.view(of: session))
        }
        interviews.add("DELETE", "/v1/kiosk/sessions/{interviewId}", "cancelKioskSession", "Cancel the session (event userCancelledSession)",
                       answers: [.noContent("Cancelled")], errors: [.kioskNotRegistered, .conflict], doors: [.kioskOnboarding]) { _, context in
            _ = try await kiosks.proven(context, session: try await kioskSessions.live(context.caller))
            try await kioskSessions.cancel(context.caller, clientIp: context.clientAddress)
            return HTTPResponse(status: 204)
        }
        interviews.add("POST", "/v1/kiosk/sessions/{interviewId}/event-tickets", "createKioskEventTicket",
                       "A single-use ticket (60 s) that opens the event stream once, for EventSource, which cannot send X-Interview-Token",
                       answers: [.created(EventTicket.self, "The ticket")], errors: [.kioskNotRegistered], doors: [.kioskOnboarding],
                       maxBodyBytes: 1024) { _, context in
            _ = try await kiosks.proven(context, session: try await kioskSessions.live(context.caller))
            let (ticket, expiresIn) = try await kioskSessions.eventTicket(context.caller)
            return .json(EventTicket(ticket: ticket, expiresIn: expiresIn), status: 201)
        }
        routes.group(\.interviewOrEventTicket, tag: .kiosk).add(
            "GET", "/v1/kiosk/sessions/{interviewId}/events", "streamKioskEvents", """
            Step events as Server-Sent Events (event names: KioskEventName; data: KioskEventData as JSON); replays after \
            Last-Event-ID, ends after a final event or when the session expires
            """,
            parameters: [
                Parameter(name: "X-Interview-Token", location: .header, schema: ["type": "string"], description: "The session's token; or a ticket instead"),
                Parameter(name: "Last-Event-ID", location: .header, schema: ["type": "string", "pattern": "^[0-9]+$"]),
                Parameter(name: "lastEventId", schema: ["type": "string", "pattern": "^[0-9]+$"]),
                Parameter(name: "ticket", schema: ["type": "string"],
                          description: "From POST …/event-tickets, spent on opening (tokens are never accepted in a URL)"),
            ],
            answers: [.content("The event stream", [("text/event-stream", ["type": "string"])])], errors: [.rateLimited],
            because: [.invalidRequest: "Last-Event-ID is not an event id",
                      .rateLimited: "this client already has FACEGATE_EVENT_STREAMS_PER_CLIENT streams open",
                      .serviceUnavailable: "this gateway already has FACEGATE_EVENT_STREAMS streams open"],
            doors: [.kioskOnboarding]
        ) { request, context in
            try await events(request, context)
        }
        let steps = routes.group(\.kioskStep, tag: .kiosk)
        let stepRefusals: [ErrorCode: String] = [.conflict: "the session waits for another step"]
        steps.add("POST", "/v1/kiosk/sessions/{interviewId}/selfie", "submitKioskSelfie", """
            Selfie burst (challengeId + repeated frame); with the app's kiosk liveness off one photo is enough (one frame field, or an \
            image body). A known face completes the flow as an existing customer
            """, body: .upload(form: KioskFrames.self),
                  answers: [.ok(KioskSessionView.self, "The session after the step, with its events (a failed check is an event, not an error)")],
                  errors: gate + [.conflict, .imageFormatError, .spoofDetected],
                  because: stepRefusals.merging([.spoofDetected: "unknown, spent or replayed challenge"]) { $1 }, doors: [.kioskOnboarding]) { request, context in
            let step = context.caller
            return .json(try await kioskSessions.selfie(try await stepCaller(context), session: step.interviewId) {
                try request.livenessFrames(challengeRequired: step.app.liveness.kiosk == .active)
            })
        }
        for (side, back) in [("id-front", false), ("id-back", true)] {
            steps.add("POST", "/v1/kiosk/sessions/{interviewId}/" + side, back ? "submitKioskIdBack" : "submitKioskIdFront",
                      back ? "Photo of the document's MRZ side; runs OCR, the face match and approval" : "Photo of the document's front (portrait)",
                      body: .upload(form: ImageUpload.self),
                      answers: [.ok(KioskSessionView.self, back ? "The session after the steps, with their events" : "The session after the step, with its events")],
                      errors: gate + [.conflict, .imageFormatError], because: stepRefusals, doors: [.kioskOnboarding]) { request, context in
                .json(try await kioskSessions.document(try await stepCaller(context), session: context.caller.interviewId, back: back) {
                    try request.image()
                })
            }
        }
    }

    /// The caller of a step: the kiosk that opened the session, proven by its key (a DPoP proof is spent here, once).
    private func stepCaller(_ context: CallContext<KioskStepCaller>) async throws -> KioskSessions.Caller {
        let step = context.caller
        guard let session = try await store.session(step.interviewId), session.appId == step.app.id else {
            throw APIError(.notFound, "no such kiosk session")
        }
        let kiosk = try await kiosks.proven(context, app: step.app, session: session)
        return KioskSessions.Caller(app: step.app, device: kiosk.jkt, kioskId: kiosk.id, clientIp: context.clientAddress)
    }

    /// Server-Sent Events: the session's step events from `Last-Event-ID` on, then new ones as they are
    /// committed (PostgreSQL polled every 300 ms), a comment every 15 s to keep proxies from closing the
    /// stream; it ends after a final event or when the session expires. Opened with `X-Interview-Token`
    /// or a ticket from `POST …/event-tickets` (`?ticket=`, spent on opening).
    private func events(_ request: HTTPRequest, _ context: CallContext<UUID>) async throws -> HTTPResponse {
        let id = context.caller
        let session = try await kioskSessions.live(id)
        // A ticket was issued to the proven kiosk (a browser's EventSource cannot sign); the token needs the kiosk's proof.
        if !Callers.opensWithTicket(request) { _ = try await kiosks.proven(context, session: session) }
        let lastEventId = request.headers["Last-Event-ID"] ?? request.query["lastEventId"] ?? "0"
        guard let after = Int(lastEventId), after >= 0 else { throw APIError(.invalidRequest, "Last-Event-ID must be an event id") }
        let slot = try eventStreams.take(for: context.clientAddress)
        let sessions = store
        let logger = context.calls.logger
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

    struct EventTicket: Codable, DocumentedSchema {
        static let schemaName = "KioskEventTicket"
        var ticket: String
        var expiresIn: Int
    }

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
}
