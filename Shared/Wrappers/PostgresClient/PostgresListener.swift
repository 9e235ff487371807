import Foundation
import Synchronization

/// One `NOTIFY` as a listener hears it.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String

    public init(channel: String, payload: String) {
        self.channel = channel
        self.payload = payload
    }
}

/// Hears `NOTIFY` on some channels (`LISTEN`) with a connection and a thread of its own, connecting again after a loss.
///
/// A notification sent while the listener is not connected is never heard: `handler` gets `.disconnected` first and
/// `.connected` once it listens again, so its owner can assume it missed something meanwhile.
public final class PostgresListener: Sendable {
    public enum Event: Sendable {
        /// Listening (again) on every channel.
        case connected
        /// Not listening: the connection failed or was lost; it is tried again every `retryInterval`.
        case disconnected(PostgresError)
        case notification(PostgresNotification)
    }

    private let configuration: PostgresConfiguration
    private let channels: [String]
    private let retryInterval: Duration
    private let handler: @Sendable (Event) -> Void
    private let stopped = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// `channels` are SQL identifiers (letters, digits, underscores).
    public init(configuration: PostgresConfiguration, channels: [String], retryInterval: Duration = .seconds(1),
                handler: @escaping @Sendable (Event) -> Void) {
        precondition(channels.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } })
        self.configuration = configuration
        self.channels = channels
        self.retryInterval = retryInterval
        self.handler = handler
    }

    /// Starts listening on a thread of its own (once).
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            listen()
            exited.signal()
        }
        thread.name = "postgres-listener"
        thread.start()
    }

    /// Stops listening and closes the connection; returns once the thread has ended (within about 200 ms).
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing), started.load(ordering: .acquiring) else { return }
        exited.wait()
    }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func listen() {
        let session = LibpqSession(configuration: configuration)
        defer { session.disconnect() }
        while !isStopped {
            let failure = session.connect() ?? session.executeScript(channels.map { "LISTEN \($0);" }.joined()).failure
            if let failure {
                handler(.disconnected(failure))
                pause(retryInterval)
                continue
            }
            handler(.connected)
            while !isStopped {
                switch session.awaitNotifications(timeoutMilliseconds: 200) {
                case .success(let notifications):
                    for notification in notifications { handler(.notification(notification)) }
                    continue
                case .failure(let error):
                    handler(.disconnected(error))
                    pause(retryInterval)
                }
                break
            }
        }
    }

    /// Sleeps `interval`, or less once stopped.
    private func pause(_ interval: Duration) {
        let end = ContinuousClock.now + interval
        while !isStopped, ContinuousClock.now < end { Thread.sleep(forTimeInterval: 0.05) }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
