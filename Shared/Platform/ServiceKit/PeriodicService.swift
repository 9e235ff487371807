import Foundation
import Synchronization

/// Runs `work` every `interval` until shutdown (housekeeping such as expiring sessions). A failed run is
/// logged and the next tick tries again; several replicas may run the same work, so it must tolerate that.
public final class PeriodicService: Service {
    public let name: String
    private let interval: Duration
    private let logger: Logger
    private let work: @Sendable () async throws -> Void
    private let loop = Mutex<Task<Void, Never>?>(nil)

    public init(name: String, every interval: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    public func start() async throws {
        let task = Task { [name, interval, logger, work] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                do {
                    try await work()
                } catch {
                    logger.warning("periodic work failed", ["service": name, "error": "\(error)"])
                }
            }
        }
        loop.withLock { $0 = task }
    }

    public func shutdown() async {
        let task = loop.withLock { $0 }
        task?.cancel()
        await task?.value
    }
}
