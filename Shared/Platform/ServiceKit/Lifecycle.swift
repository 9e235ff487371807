import Foundation
import Synchronization

/// A long-running part of a process. `start` returns once the part is serving (its loops run in
/// tasks it owns); `shutdown` stops taking work, finishes or hands back what is in flight, and returns.
public protocol Service: AnyObject, Sendable {
    var name: String { get }
    func start() async throws
    func shutdown() async
}

/// Where a part of the process reports that it stopped on its own (a job loop whose consumer died):
/// the service group listening to it stops everything, and the process exits non-zero so that its
/// supervisor (`make run`, Kubernetes) starts a fresh one.
public final class FailureSignal: Sendable {
    private let listener = Mutex<(@Sendable (String, String) -> Void)?>(nil)
    private let first = Mutex<(service: String, error: String)?>(nil)

    public init() {}

    public func report(_ service: String, _ error: String) {
        first.withLock { if $0 == nil { $0 = (service, error) } }
        listener.withLock { $0 }?(service, error)
    }

    /// The failure reported so far, if any.
    public var failure: (service: String, error: String)? { first.withLock { $0 } }

    func listen(_ body: @escaping @Sendable (String, String) -> Void) {
        listener.withLock { $0 = body }
        if let (service, error) = failure { body(service, error) }
    }
}

/// A service group that stopped because one of its parts failed.
public struct ServiceFailed: Error, CustomStringConvertible {
    public var service: String
    public var error: String
    public var description: String { "\(service) stopped unexpectedly: \(error)" }
}

/// Starts services in order and stops them in reverse, modelled on swift-service-lifecycle:
/// SIGTERM → graceful shutdown bounded by `shutdownTimeout`; SIGINT (Ctrl-C) → the same, and a
/// second signal exits at once. A part reporting through `failures` also stops the group, and `run`
/// then throws `ServiceFailed`.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let logger: Logger
    private let shutdownTimeout: Duration
    private let failures: FailureSignal?
    /// Until a stop is asked for, the waiting `run` (if it waits yet); then the first reason given. One lock for both,
    /// so a stop asked for while `run` is about to wait is never lost.
    private let stopState = Mutex<StopState>(.running(nil))

    private enum StopState {
        case running(CheckedContinuation<String, Never>?)
        case stopping(reason: String)
    }

    public init(services: [any Service], logger: Logger, shutdownTimeout: Duration, failures: FailureSignal? = nil) {
        self.services = services
        self.logger = logger
        self.shutdownTimeout = shutdownTimeout
        self.failures = failures
    }

    /// Asks the group to stop (tests, fatal errors). Safe to call from any thread, any number of times.
    public func requestStop(reason: String) {
        let waiting = stopState.withLock { state -> CheckedContinuation<String, Never>? in
            guard case .running(let waiting) = state else { return nil }
            state = .stopping(reason: reason)
            return waiting
        }
        waiting?.resume(returning: reason)
    }

    /// Runs until a signal or `requestStop`; returns the reason. Throws if a service fails to start
    /// (after stopping the ones already started).
    @discardableResult
    public func run(handleSignals: Bool = true) async throws -> String {
        var started: [any Service] = []
        do {
            for service in services {
                logger.info("starting \(service.name)")
                try await service.start()
                started.append(service)
            }
        } catch {
            logger.error("\(started.count < services.count ? services[started.count].name : "service") failed to start", ["error": "\(error)"])
            await stop(started)
            throw error
        }
        logger.info("all services started")
        failures?.listen { [self] service, error in
            logger.error("\(service) stopped unexpectedly; stopping the process", ["error": error])
            requestStop(reason: "\(service) failed")
        }
        let signals = handleSignals ? SignalWatcher(group: self, logger: logger) : nil
        let reason = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            let early = stopState.withLock { state -> String? in
                if case .stopping(let reason) = state { return reason }
                state = .running(continuation)
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }
        logger.info("stopping", ["reason": reason])
        await stop(started)
        signals?.cancel()
        logger.info("stopped")
        if let (service, error) = failures?.failure { throw ServiceFailed(service: service, error: error) }
        return reason
    }

    private func stop(_ started: [any Service]) async {
        let logger = self.logger
        let finished = await finishes(within: shutdownTimeout) {
            for service in started.reversed() {
                logger.info("stopping \(service.name)")
                await service.shutdown()
            }
        }
        if !finished { logger.error("shutdown took longer than \(shutdownTimeout); exiting with work in flight") }
    }
}

/// Runs `work` in a task of its own and waits for it at most `limit`; true if it finished in time. A task group cannot
/// bound a wait (it awaits every child, and work that ignores cancellation holds it forever); here the late work is
/// left running and the caller goes on.
public func finishes(within limit: Duration, _ work: @escaping @Sendable () async -> Void) async -> Bool {
    await withCheckedContinuation { continuation in
        let answer = FirstAnswer(continuation)
        let timer = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }  // cancelled: the work finished
            answer.give(false)
        }
        Task {
            await work()
            answer.give(true)
            timer.cancel()
        }
    }
}

/// Resumes a continuation with the first answer given; later ones are dropped.
private final class FirstAnswer: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation = Mutex(continuation) }

    func give(_ answer: Bool) { continuation.withLock { $0.take() }?.resume(returning: answer) }
}

/// Turns SIGTERM and SIGINT into a graceful stop; a second signal ends the process at once.
final class SignalWatcher: @unchecked Sendable {  // `sources` is set once in init; dispatch sources are thread-safe
    private let sources: [any DispatchSourceSignal]

    init(group: ServiceGroup, logger: Logger) {
        let count = Atomic<Int>(0)
        sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let seen = count.add(1, ordering: .relaxed).newValue
                if seen > 1 {
                    logger.warning("second signal: exiting now")
                    exit(130)
                }
                group.requestStop(reason: number == SIGTERM ? "SIGTERM" : "SIGINT")
            }
            source.resume()
            return source
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }
}

/// The shape of every `main.swift`: read configuration, build, run; a configuration error is one line and exit 2.
public enum ServiceMain {
    public static func run(_ body: @Sendable (Environment) async throws -> Void) async {
        do {
            try await body(Environment())
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("fatal: \(error)\n".utf8))
            exit(1)
        }
    }
}
