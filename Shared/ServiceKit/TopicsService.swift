import Synchronization

/// Makes sure the deployment's topics exist, retrying while the broker is away (readiness reports the
/// broker meanwhile). With `waitForTopics`, `start` returns only once they exist: a consumer that
/// subscribes to a topic not yet created sees no partitions until the next metadata refresh, minutes later.
public final class TopicsService: Service {
    public let name = "topics"
    private let runtime: ServiceRuntime
    private let waitForTopics: Bool
    private let task = Mutex<Task<Void, Never>?>(nil)

    public init(runtime: ServiceRuntime, waitForTopics: Bool = false) {
        self.runtime = runtime
        self.waitForTopics = waitForTopics
    }

    public func start() async throws {
        let runtime = self.runtime
        task.withLock {
            $0 = Task {
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
        }
        if waitForTopics { await task.withLock({ $0 })?.value }
    }

    public func shutdown() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}
