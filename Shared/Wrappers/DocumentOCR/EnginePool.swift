import Foundation
import Synchronization

/// Tesseract handles on dedicated threads: a handle is not thread-safe and recognition blocks for
/// hundreds of milliseconds, so jobs never run on the cooperative pool. Each thread owns one engine and
/// takes jobs from one FIFO queue.
final class EnginePool: Sendable {
    private let queue: JobQueue

    init(count: Int, makeEngine: () throws(MRZReadError) -> TesseractEngine) throws(MRZReadError) {
        var engines: [TesseractEngine] = []
        for _ in 0..<max(1, count) { engines.append(try makeEngine()) }
        queue = JobQueue(workers: engines.count)
        for (index, engine) in engines.enumerated() {
            let owned = OwnedEngine(engine: engine)
            let queue = self.queue
            let thread = Thread { queue.serve(owned.engine) }
            thread.name = "facegate.ocr.\(index)"
            // LSTM recognition recurses deeper than the default secondary-thread stack allows.
            thread.stackSize = 16 << 20
            thread.start()
        }
    }

    deinit { queue.stop() }

    /// Runs `body` with an engine on its thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable (TesseractEngine) -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.submit { engine in continuation.resume(returning: body(engine)) }
        }
    }
}

/// The engine moves once from the creating thread to the worker thread, which alone uses it afterwards.
private struct OwnedEngine: @unchecked Sendable {
    let engine: TesseractEngine
}

private final class JobQueue: Sendable {
    typealias Job = @Sendable (TesseractEngine) -> Void
    private struct State {
        var jobs: [Job] = []
        var stopping = false
    }
    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    private let workers: Int

    init(workers: Int) { self.workers = workers }

    func submit(_ job: @escaping Job) {
        state.withLock { $0.jobs.append(job) }
        signal.signal()
    }

    func stop() {
        state.withLock { $0.stopping = true }
        for _ in 0..<workers { signal.signal() }
    }

    /// The worker thread's loop; returns (and releases its engine) once the pool is gone.
    func serve(_ engine: TesseractEngine) {
        while true {
            signal.wait()
            let next: Job?? = state.withLock { state in
                if !state.jobs.isEmpty { return .some(state.jobs.removeFirst()) }
                return state.stopping ? .none : .some(nil)
            }
            switch next {
            case .none: return
            case .some(.none): continue
            case .some(.some(let job)): job(engine)
            }
        }
    }
}
