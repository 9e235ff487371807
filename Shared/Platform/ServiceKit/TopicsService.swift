/// Makes sure the deployment's topics exist: at start, retrying while the broker is away (readiness reports the
/// broker meanwhile), and then every `watchInterval`, so topics a broker lost — the local broker keeps nothing
/// across a restart — are created again with their partition counts and retention while the service runs.
/// With `waitForTopics`, it is ready only once they exist: a consumer that subscribes to a topic not yet
/// created sees no partitions until its next metadata refresh.
public final class TopicsService: Service {
    public let name = "topics"
    private let runtime: ServiceRuntime
    private let waitForTopics: Bool
    private let watchInterval: Duration

    public init(runtime: ServiceRuntime, waitForTopics: Bool = false, watchInterval: Duration = .seconds(5)) {
        self.runtime = runtime
        self.waitForTopics = waitForTopics
        self.watchInterval = watchInterval
    }

    public func run(_ context: ServiceContext) async throws {
        if !waitForTopics { context.ready() }
        let (runtime, watchInterval) = (self.runtime, self.watchInterval)
        _ = try await context.cancellingOnShutdown {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    try await runtime.ensureTopics()
                    break
                } catch {
                    runtime.logger.error("broker not reachable; retrying", ["attempt": String(attempt), "error": "\(error)"])
                    try await Task.sleep(for: .seconds(min(attempt, 5)))
                }
            }
            context.ready()
            while true {
                try await Task.sleep(for: watchInterval)
                guard let recreated = try? await runtime.ensureTopics(), !recreated.isEmpty else { continue }
                runtime.logger.warning("topics were missing and are created again (the broker lost them)",
                                       ["kafka.topics": recreated.joined(separator: ",")])
            }
        }
    }
}
