import Foundation

/// Runs `work` every `interval` until it is cancelled (housekeeping such as expiring sessions). A failed run is
/// logged and the next tick tries again; several replicas may run the same work, so it must tolerate that.
public final class PeriodicService: Service {
    public let name: String
    private let interval: Duration
    private let logger: Logger
    private let work: @Sendable () async throws -> Void

    public init(name: String, every interval: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    public func run(_ context: ServiceContext) async throws {
        context.ready()
        let (name, interval, logger, work) = (self.name, self.interval, self.logger, self.work)
        _ = try await context.cancellingOnShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                do {
                    try await work()
                } catch {
                    logger.warning("periodic work failed", ["service": name, "error": "\(error)"])
                }
            }
        }
    }
}
