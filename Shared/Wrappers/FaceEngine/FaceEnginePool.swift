internal import CFaceEngine
import Dispatch
import Foundation
import Synchronization

/// N engines, each owned by its own dedicated thread, behind an async API. dlib inference blocks for
/// tens to hundreds of milliseconds, so it never runs on the cooperative pool: callers suspend while a
/// worker thread runs the job. Jobs are served in arrival order by whichever worker is free; a job
/// that has started runs to completion even if the calling task is cancelled.
public final class FaceEnginePool: Sendable {
    public let count: Int
    private let queue: FaceJobQueue
    /// SFace pools tell OpenCV's thread gate what they have queued (`FaceEngine.setLoneAnalysisThreads`).
    private let notesQueue: Bool
    private let workersExited: DispatchGroup

    /// Starts `count` threads and loads one engine on each (in parallel); returns once all are ready.
    /// Blocks the calling thread for the model load (about a second): create pools at start-up.
    public init(
        configuration: FaceEngineConfiguration,
        count: Int = ProcessInfo.processInfo.activeProcessorCount
    ) throws(FaceEngineError) {
        let count = max(1, count)
        // Parallelism comes from the engines; BLAS threads on top of them only contend.
        if count > 1 { fe_set_blas_threads(1) }
        let queue = FaceJobQueue()
        let workersExited = DispatchGroup()
        let startups = Mutex<[FaceEngineError?]>([])
        let allStarted = DispatchSemaphore(value: 0)
        for index in 0..<count {
            workersExited.enter()
            let thread = Thread {
                defer { workersExited.leave() }
                let engine: FaceEngine
                do throws(FaceEngineError) {
                    engine = try FaceEngine(configuration: configuration)
                    startups.withLock { $0.append(nil) }
                    allStarted.signal()
                } catch {
                    startups.withLock { $0.append(error) }
                    allStarted.signal()
                    return
                }
                while let job = queue.next() {
                    job(engine)
                }
            }
            thread.name = "face-engine-\(index)"
            thread.stackSize = 8 << 20
            thread.start()
        }
        for _ in 0..<count { allStarted.wait() }
        if let failure = startups.withLock({ $0.compactMap { $0 }.first }) {
            queue.close()
            workersExited.wait()
            throw failure
        }
        self.count = count
        self.queue = queue
        self.notesQueue = configuration.model == .sface2021dec
        self.workersExited = workersExited
    }

    deinit {
        // Every caller holds the pool while its job is queued, so the queue is empty here.
        queue.close()
        workersExited.wait()
    }

    public func analyze(_ image: [UInt8], options: FaceAnalysisOptions = .init()) async throws(FaceEngineError) -> FaceAnalysis {
        try await run { engine throws(FaceEngineError) in try engine.analyze(image, options: options) }
    }

    /// `FaceEngine.embedding(_:box:)` on a pool thread.
    public func embedding(_ image: [UInt8], box: FaceBox) async throws(FaceEngineError) -> [Float] {
        try await run { engine throws(FaceEngineError) in try engine.embedding(image, box: box) }
    }

    private func run<T: Sendable>(
        _ work: @escaping @Sendable (FaceEngine) throws(FaceEngineError) -> T
    ) async throws(FaceEngineError) -> T {
        let notesQueue = notesQueue
        let result: Result<T, FaceEngineError> = await withCheckedContinuation { continuation in
            if notesQueue { fe_note_queued_analyses(1) }
            queue.submit { engine in
                if notesQueue { fe_note_queued_analyses(-1) }
                continuation.resume(returning: Result { () throws(FaceEngineError) -> T in try work(engine) })
            }
        }
        return try result.get()
    }
}

/// FIFO of jobs shared by the pool's worker threads: a counting semaphore wakes one worker per job.
final class FaceJobQueue: Sendable {
    typealias Job = @Sendable (FaceEngine) -> Void

    private struct State {
        var jobs: [Job] = []
        var head = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    func submit(_ job: @escaping Job) {
        state.withLock { $0.jobs.append(job) }
        available.signal()
    }

    /// Blocks until a job arrives; nil once the queue is closed and drained.
    func next() -> Job? {
        while true {
            available.wait()
            let (job, closed): (Job?, Bool) = state.withLock { state in
                guard state.head < state.jobs.count else { return (nil, state.closed) }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head >= 64 && state.head * 2 >= state.jobs.count {
                    state.jobs.removeFirst(state.head)
                    state.head = 0
                }
                return (job, false)
            }
            if let job { return job }
            if closed {
                available.signal()  // pass the wake-up on to the next idle worker
                return nil
            }
        }
    }

    /// Each worker drains what is left and then stops; one wake-up is passed from worker to worker.
    func close() {
        state.withLock { $0.closed = true }
        available.signal()
    }
}
