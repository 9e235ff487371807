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

/// The transactions a worker recorded, in order.
public final class RecordedTransactions: TransactionRecorder {
    private let state = Mutex<[TransactionRecord]>([])
    public var records: [TransactionRecord] { state.withLock { $0 } }

    public init() {}

    public func append(_ record: TransactionRecord) async throws { state.withLock { $0.append(record) } }
}
