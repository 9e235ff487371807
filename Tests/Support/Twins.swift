import FaceGateCore
import Foundation
import ServiceKit
import Synchronization

/// The matchers' answers to a worker's face jobs, in order, and the jobs it sent; with no answer left, the matcher does
/// not answer (the job throws, as a requester's deadline does). A twin at the job boundary: what a matcher would answer
/// is the test's to say, the worker's handling of it is what is tested.
public final class ScriptedFaceJobs: FaceJobRequester {
    private let state = Mutex<(answers: [FaceJobResult], jobs: [FaceJob])>(([], []))
    public var jobs: [FaceJob] { state.withLock { $0.jobs } }

    public init() {}

    public func answer(_ results: FaceJobResult...) { state.withLock { $0.answers += results } }

    public func faceJob(_ job: FaceJob, messageId: String?, expectedReplies: Int) async throws -> [FaceJobResult] {
        try state.withLock { state in
            state.jobs.append(job)
            guard !state.answers.isEmpty else { throw CancellationError() }
            return [state.answers.removeFirst()]
        }
    }
}

/// The environment of a service built in a test that starts no server: real message keys for every platform service
/// (`keys`), and a database and broker that are never reached.
public struct OfflineServiceEnvironment: Sendable {
    public let keys = ServiceKeys.generate(for: ServiceKeys.platformServices)

    public init() {}

    /// `service`'s variables, with `extra` on top.
    public func values(for service: String, _ extra: [String: String] = [:]) -> [String: String] {
        [
            "FACEGATE_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "FACEGATE_KAFKA_BROKERS": "127.0.0.1:1",
            "FACEGATE_SERVICE_KEY": keys.seeds[service] ?? "", "FACEGATE_SERVICE_PUBLIC_KEYS": keys.publicKeys, "FACEGATE_LOG_LEVEL": "error",
        ].merging(extra) { $1 }
    }
}
