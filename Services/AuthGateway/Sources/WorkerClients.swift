import FaceGateCore
import Foundation
import KafkaClient
import KioskSessionRecords
import ServiceKit

/// The workers as the use cases see them: each a request over Kafka answered within the request deadline (a broker
/// down or a worker silent is `SERVICE_UNAVAILABLE`, never a hang), or a broadcast.

/// Face jobs to the matchers, each photo embedded once however the gallery is sharded (`FaceJobRequester.faceJob(_:shards:)`).
struct MatcherClient: FaceMatching {
    let requester: RequesterService
    /// `FACEGATE_MATCHER_SHARDS`: how many slices the gallery is cut into.
    let shards: Int
    let roundTrip: Histogram
    let logger: Logger

    func match(_ job: FaceJob, messageId: String?) async throws -> FaceJobResult {
        let started = ContinuousClock.now
        let result: FaceJobResult
        do {
            result = try await requester.faceJob(job, messageId: messageId, shards: shards)
        } catch {
            logger.warning("face job not answered", ["error": "\(error)", "job.kind": job.kind.rawValue])
            throw APIError(.serviceUnavailable, "face matching is unavailable right now; try again")
        }
        roundTrip.observe(ContinuousClock.now - started, ["kind": job.kind.rawValue])
        return result
    }
}

/// CTID jobs to the ctid-verifier.
struct CTIDClient: CTIDJobs {
    let requester: RequesterService
    let logger: Logger

    func ctidJob(_ job: CTIDJob) async throws -> CTIDJobResult {
        do {
            return try await requester.send(job, appId: job.appId)[0]
        } catch {
            logger.warning("ctid job not answered", ["error": "\(error)", "job.kind": job.kind.rawValue])
            throw APIError(.serviceUnavailable, "identity verification is unavailable right now; try again")
        }
    }
}

/// Commands to the kiosk-orchestrator, which owns the sessions; the sessions read from PostgreSQL.
struct KioskOrchestratorClient: KioskCommands, KioskSessionReads {
    let requester: RequesterService
    let sessions: KioskSessionStore
    let logger: Logger

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
        guard let session = try await Tenant.acrossApps({ try await sessions.session(id) }) else { return nil }
        Tenant.enter(app: session.appId)
        return session
    }

    func view(of session: KioskSession) async throws -> KioskSessionView { try await sessions.view(of: session) }
}

/// Template changes to every matcher (`gallery.changes.v1`).
struct GalleryBroadcaster: GalleryBroadcast {
    let producer: KafkaProducer
    let topic: String
    let logger: Logger

    func broadcast(_ change: GalleryChange) async {
        do {
            _ = try await producer.send(KafkaRecord(topic: topic, key: Array(change.templateId.uuidString.lowercased().utf8),
                                                    value: try FaceGateJSON.encode(change), headers: [TraceContext.header]))
        } catch {
            logger.warning("gallery change not broadcast; matchers apply it at their next reconciliation", ["error": "\(error)"])
        }
    }
}
