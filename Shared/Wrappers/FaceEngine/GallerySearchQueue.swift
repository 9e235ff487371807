import Foundation

/// Runs gallery searches on a thread of its own (they are CPU-bound and synchronous, so they stay off the
/// cooperative pool) and answers the queries that waited while a scan ran together, with one batch scan
/// per gallery: at 1M templates a scan costs 56 ms alone and about 11 ms per query in a batch of 16
/// (Benchmarks/RESULTS.md). Nothing waits for a batch to fill: a query that finds the thread idle is
/// scanned at once, so a lone query pays only the hand-over to the thread.
public final class GallerySearchQueue: Sendable {
    /// The most queries one scan answers.
    public let maxBatch: Int
    let state: State

    /// `maxBatch` 1 scans every query alone (in arrival order, on the queue's thread).
    public init(maxBatch: Int = 16) {
        precondition(maxBatch >= 1, "a batch holds at least one query")
        self.maxBatch = maxBatch
        state = State()
        let state = self.state
        let thread = Thread { [maxBatch] in state.run(maxBatch: maxBatch) }
        thread.name = "gallery-search"
        thread.start()
    }

    /// The k nearest templates of `gallery`, as `FaceGallery.search(_:k:)` answers them.
    public func search(_ query: [Float], k: Int, in gallery: FaceGallery) async -> [GalleryMatch] {
        await withCheckedContinuation { continuation in
            if !state.submit(Pending(gallery: gallery, query: query, k: k, continuation: continuation)) {
                continuation.resume(returning: gallery.search(query, k: k))
            }
        }
    }

    /// Answers what is queued, then ends the thread; later searches run on the caller's thread.
    public func close() { state.close() }

    /// Scans answered and queries answered so far: their ratio is the mean batch.
    public var counts: (scans: Int, queries: Int) { state.counts }

    struct Pending {
        let gallery: FaceGallery
        let query: [Float]
        let k: Int
        let continuation: CheckedContinuation<[GalleryMatch], Never>
    }

    /// The queue, guarded by its condition.
    final class State: @unchecked Sendable {
        private let condition = NSCondition()
        private var pending: [Pending] = []
        private var closed = false
        /// While held, queries queue and no scan starts (tests use it to see exactly how queued queries share scans).
        private var held = false
        private var scans = 0
        private var queries = 0

        func submit(_ query: Pending) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            guard !closed else { return false }
            pending.append(query)
            condition.signal()
            return true
        }

        func close() {
            condition.lock()
            closed = true
            condition.signal()
            condition.unlock()
        }

        func hold(_ holding: Bool) {
            condition.lock()
            held = holding
            condition.signal()
            condition.unlock()
        }

        var waiting: Int {
            condition.lock()
            defer { condition.unlock() }
            return pending.count
        }

        var counts: (scans: Int, queries: Int) {
            condition.lock()
            defer { condition.unlock() }
            return (scans, queries)
        }

        /// The thread's loop: take the oldest query and the others of its gallery (up to `maxBatch`), scan, answer.
        func run(maxBatch: Int) {
            while true {
                condition.lock()
                while (pending.isEmpty || held) && !closed { condition.wait() }
                if pending.isEmpty {
                    condition.unlock()
                    return
                }
                let gallery = pending[0].gallery
                var batch: [Pending] = []
                var rest: [Pending] = []
                for query in pending {
                    if batch.count < maxBatch, query.gallery === gallery { batch.append(query) } else { rest.append(query) }
                }
                pending = rest
                scans += 1
                queries += batch.count
                condition.unlock()
                if batch.count == 1 {
                    batch[0].continuation.resume(returning: gallery.search(batch[0].query, k: batch[0].k))
                } else {
                    let k = batch.map(\.k).max()!
                    let answers = gallery.search(batch: batch.map(\.query), k: k)
                    for (query, matches) in zip(batch, answers) {
                        query.continuation.resume(returning: Array(matches.prefix(max(0, query.k))))
                    }
                }
            }
        }
    }
}
