import Synchronization

/// Makes sure the deployment's topics exist: at start, retrying while the broker is away (readiness reports the
/// broker meanwhile), and then every `watchInterval`, so topics a broker lost — the local broker keeps nothing
/// across a restart — are created again with their partition counts and retention while the service runs.
/// With `waitForTopics`, `start` returns only once they exist: a consumer that subscribes to a topic not yet
/// created sees no partitions until the next metadata refresh, minutes later.
public final class TopicsService: Service {
    public let name = "topics"
    private let runtime: ServiceRuntime
    private let waitForTopics: Bool
    private let watchInterval: Duration
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(runtime: ServiceRuntime, waitForTopics: Bool = false, watchInterval: Duration = .seconds(5)) {
        self.runtime = runtime
        self.waitForTopics = waitForTopics
        self.watchInterval = watchInterval
    }

    public func start() async throws {
        let runtime = self.runtime
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
        let watchInterval = self.watchInterval
        task.withLock {
            $0 = Task {
                await created.value
                while !Task.isCancelled {
                    try? await Task.sleep(for: watchInterval)
                    guard !Task.isCancelled, let recreated = try? await runtime.ensureTopics(), !recreated.isEmpty else { continue }
                    runtime.logger.warning("topics were missing and are created again (the broker lost them)",
                                           ["kafka.topics": recreated.joined(separator: ",")])
                }
            }
        }
        if waitForTopics { await created.value }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
