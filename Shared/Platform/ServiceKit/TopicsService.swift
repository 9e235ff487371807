import Synchronization

/// Makes sure the deployment's topics exist: at start, retrying while the broker is away (readiness reports the
/// broker meanwhile), and then every `watchInterval`, so topics a broker lost — the local broker keeps nothing
/// across a restart — are created again with their partition counts and retention while the service runs.
/// With `waitForTopics`, `start` returns only once they exist: a consumer that subscribes to a topic not yet
/// created sees no partitions until its next metadata refresh.
public final class TopicsService: Service {
    public let name = "topics"
    private let runtime: ServiceRuntime
    private let waitForTopics: Bool
    private let watchInterval: Duration
    /// The first creation (retried while the broker is away) and the watch after it.
    private let tasks = Mutex<[Task<Void, Never>]>([])

    public init(runtime: ServiceRuntime, waitForTopics: Bool = false, watchInterval: Duration = .seconds(5)) {
        self.runtime = runtime
        self.waitForTopics = waitForTopics
        self.watchInterval = watchInterval
    }

    public func start() async throws {
        let (runtime, watchInterval) = (self.runtime, self.watchInterval)
        let created = Task {
            var attempt = 0
            while !Task.isCancelled {
                attempt += 1
                do {
                    try await runtime.ensureTopics()
                    return
                } catch {
                    runtime.logger.error("broker not reachable; retrying", ["attempt": String(attempt), "error": "\(error)"])
                    try? await Task.sleep(for: .seconds(min(attempt, 5)))
                }
            }
        }
        let watch = Task {
            await created.value
            while !Task.isCancelled {
                try? await Task.sleep(for: watchInterval)
                guard !Task.isCancelled, let recreated = try? await runtime.ensureTopics(), !recreated.isEmpty else { continue }
                runtime.logger.warning("topics were missing and are created again (the broker lost them)",
                                       ["kafka.topics": recreated.joined(separator: ",")])
            }
        }
        tasks.withLock { $0 = [created, watch] }
        if waitForTopics { await created.value }
    }

    public func shutdown() async {
        let running = tasks.withLock { $0 }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }
}
