import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit

/// The workers as the use cases see them: each a request over Kafka answered within the request deadline (a broker
/// down or a worker silent is `SERVICE_UNAVAILABLE`, never a hang), or a broadcast.

/// Face jobs to the matchers. On a sharded gallery a photo is still embedded once: a job that needs no gallery slice goes
/// to one shard, and an identify's probe is embedded by one shard whose sealed template, not the photo, every shard then
/// searches (the answers merged).
struct MatcherClient: FaceMatching {
    let requester: RequesterService
    /// `FACEGATE_MATCHER_SHARDS`: how many slices the gallery is cut into.
    let shards: Int
    let roundTrip: Histogram
    let logger: Logger

    func match(_ job: FaceJob, messageId: String?) async throws -> FaceJobResult {
        guard shards > 1 else { return try await ask(job, messageId: messageId, replies: 1) }
        var single = job
        single.shard = Int.random(in: 0..<shards)
        switch job.payload {
        case .identify, .liveness where job.identifies:
            single.probeOnly = true
            let probed = try await ask(single, messageId: nil, replies: 1)
            // A refusal (no face, no clear subject, a spoof) or a bound user's 1:1 match ends it there.
            guard probed.outcome == .detected, let template = probed.sealedTemplate else { return probed }
            let search = FaceJob(appId: job.appId, threshold: job.threshold, margin: job.margin, .search(template: template, topK: job.topK))
            var result = try await ask(search, messageId: nil, replies: shards)
            (result.faceCount, result.quality, result.subject) = (probed.faceCount, probed.quality, probed.subject)
            (result.liveness, result.bestFrameIndex) = (probed.liveness, probed.bestFrameIndex)
            result.timings.merge(probed.timings) { search, _ in search }
            return result
        case .verify, .detect, .template, .liveness:
            return try await ask(single, messageId: messageId, replies: 1)
        case .enroll, .reembed, .search:
            return try await ask(job, messageId: messageId, replies: shards)
        }
    }

    private func ask(_ job: FaceJob, messageId: String?, replies: Int) async throws -> FaceJobResult {
        let started = ContinuousClock.now
        let results: [FaceJobResult]
        do {
            results = try await requester.faceJob(job, messageId: messageId, expectedReplies: replies)
        } catch {
            logger.warning("face job not answered", ["error": "\(error)", "job.kind": job.kind.rawValue])
            throw APIError(.serviceUnavailable, "face matching is unavailable right now; try again")
        }
        roundTrip.observe(ContinuousClock.now - started, ["kind": job.kind.rawValue])
        return FaceJobResult.merged(results, for: job)
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
