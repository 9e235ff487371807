import Foundation
import Synchronization

/// A long-running part of a process, run as a child task of its `ServiceGroup`. `run` calls `context.ready()` once the
/// part serves (the group starts the next part only then) and serves until the group asks it to shut down
/// (`context.shutdownRequested`); then it stops taking work, finishes or hands back what is in flight, and returns. Its
/// own loops run inside it, most as `context.cancellingOnShutdown { … }`, so the shutdown cancels them by structure.
/// Returning or throwing before the shutdown is a failure: the group stops every part and `ServiceGroup.run` throws
/// `ServiceFailed`, so the process exits non-zero and its supervisor (`make run`, Kubernetes) starts a fresh one
/// instead of keeping a process up, "ready", that does nothing.
public protocol Service: AnyObject, Sendable {
    var name: String { get }
    func run(_ context: ServiceContext) async throws
}

/// What the group tells a running service, and what the service tells the group.
public final class ServiceContext: Sendable {
    fileprivate let readyLatch = Latch()
    fileprivate let shutdown = Latch()

    public init() {}

    /// The service serves: the group may start the next one.
    public func ready() { readyLatch.open() }

    /// Whether the group has asked the service to shut down.
    public var isShuttingDown: Bool { shutdown.isOpen }

    /// Returns once the group asks the service to shut down (or the calling task is cancelled).
    public func shutdownRequested() async { await shutdown.wait() }

    /// Runs `body` until it ends or the group asks the service to shut down, which cancels it (a loop of sleeps and
    /// retries, a watcher); nil when it was cancelled so.
    public func cancellingOnShutdown<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask { [shutdown] in
                await shutdown.wait()
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }
}

/// A service group that stopped because one of its parts failed.
public struct ServiceFailed: Error, CustomStringConvertible {
    public var service: String
    public var error: String
    public var description: String { "\(service) stopped unexpectedly: \(error)" }
}

/// Runs services as the children of one task group, modelled on swift-service-lifecycle: each starts once the one
/// before it is ready, and a stop shuts them down one by one in reverse order, each finishing before the next is told,
/// so a part never loses what it depends on while it drains. SIGTERM → that stop, bounded by
/// `shutdownTimeout`; SIGINT (Ctrl-C) → the same, and a second signal exits at once. A part that ends on its own stops
/// the group too, and `run` then throws `ServiceFailed`.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let logger: Logger
    private let shutdownTimeout: Duration
    /// The first reason a stop was asked for (a signal, `requestStop`, a part that ended); opened with it.
    private let stopReason = Mutex<String?>(nil)
    private let stopRequested = Latch()
    /// The first part that ended on its own, or failed to start.
    private let failure = Mutex<ServiceFailed?>(nil)
    /// Opened once every service is ready, or the start gave up.
    private let startEnded = Latch()

    public init(services: [any Service], logger: Logger, shutdownTimeout: Duration) {
        self.services = services
        self.logger = logger
        self.shutdownTimeout = shutdownTimeout
    }

    /// Asks the group to stop (tests, fatal errors). Safe to call from any thread, any number of times.
    public func requestStop(reason: String) {
        let first = stopReason.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        if first { stopRequested.open() }
    }

    /// Starts the services, runs until a signal, `requestStop` or a part ending on its own, stops them, and returns the
    /// reason. Throws `ServiceFailed` if a part failed to start or ended on its own. Cancelling the calling task stops
    /// the group the same way.
    @discardableResult
    public func run(handleSignals: Bool = true) async throws -> String {
        let signals = handleSignals ? SignalWatcher(group: self, logger: logger) : nil
        defer { signals?.cancel() }
        // The services' task group runs in a task of its own, which `run` waits for: only so that a part ignoring
        // cancellation past `shutdownTimeout` cannot keep the process from ending (the task is then left behind).
        let finished = Latch()
        let stopping = Latch()
        Task { [self] in
            await runServices(stopping: stopping)
            finished.open()
        }
        await withTaskCancellationHandler {
            await stopping.wait()
        } onCancel: { [self] in
            requestStop(reason: "the task running the group was cancelled")
        }
        // A task of its own: a cancelled caller's waits end at once, and the services must still be waited for.
        if await !Task(operation: { await finished.wait(atMost: shutdownTimeout) }).value {
            logger.error("shutdown took longer than \(shutdownTimeout); exiting with work in flight")
        }
        logger.info("stopped")
        if let failure = failure.withLock({ $0 }) { throw failure }
        return stopReason.withLock { $0 } ?? "stopped"
    }

    /// Returns once every service is ready (or the start gave up: see `run`).
    public func started() async { await startEnded.wait() }

    /// One child per service, started in order; then, once a stop is asked for, stopped in reverse.
    private func runServices(stopping: Latch) async {
        await withTaskGroup(of: Void.self) { group in
            var started: [Child] = []
            for service in services where !stopRequested.isOpen {
                logger.info("starting \(service.name)")
                let child = Child(service)
                group.addTask { [self] in await run(child) }
                await child.settled.wait()
                guard child.exit.withLock({ $0 }) == nil else {
                    logger.error("\(service.name) failed to start")
                    break
                }
                started.append(child)
            }
            if started.count == services.count { logger.info("all services started") }
            startEnded.open()
            await stopRequested.wait()
            stopping.open()
            logger.info("stopping", ["reason": stopReason.withLock { $0 } ?? ""])
            for child in started.reversed() {
                logger.info("stopping \(child.service.name)")
                child.context.shutdown.open()
                await child.finished.wait()
            }
        }
    }

    /// Runs a service; one that ends before its shutdown was asked for stops the group.
    private func run(_ child: Child) async {
        let outcome: String
        do {
            try await child.service.run(child.context)
            outcome = "returned"
        } catch {
            outcome = "\(error)"
        }
        child.exit.withLock { $0 = outcome }
        child.settled.open()
        if !child.context.isShuttingDown {
            logger.error("\(child.service.name) stopped unexpectedly; stopping the process", ["error": outcome])
            failure.withLock { if $0 == nil { $0 = ServiceFailed(service: child.service.name, error: outcome) } }
            requestStop(reason: "\(child.service.name) failed")
        }
        child.finished.open()
    }

    private final class Child: Sendable {
        let service: any Service
        let context = ServiceContext()
        let finished = Latch()
        /// Opened once the service is ready or has ended, whichever comes first.
        let settled = Latch()
        /// How the service's `run` ended, once it has.
        let exit = Mutex<String?>(nil)

        init(_ service: any Service) {
            self.service = service
            let settled = self.settled
            context.readyLatch.onOpen { settled.open() }
        }
    }
}

/// A one-time event tasks wait for. `wait` returns once it is open, or early when the waiting task is cancelled.
final class Latch: Sendable {
    private struct State {
        var open = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelled: Set<Int> = []
        var nextId = 0
        var onOpen: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.open } }

    func open() {
        let (waiters, actions) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [@Sendable () -> Void]) in
            guard !state.open else { return ([], []) }
            state.open = true
            defer { state.waiters = [:]; state.onOpen = [] }
            return (Array(state.waiters.values), state.onOpen)
        }
        for waiter in waiters { waiter.resume() }
        for action in actions { action() }
    }

    /// Runs `action` when the latch opens (at once if it is open).
    func onOpen(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.open { return true }
            state.onOpen.append(action)
            return false
        }
        if now { action() }
    }

    func wait() async {
        let id = state.withLock { state -> Int in
            state.nextId += 1
            return state.nextId
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.open || state.cancelled.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }

    /// Waits at most `limit`; true if the latch opened in time.
    func wait(atMost limit: Duration) async -> Bool {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait() }
            group.addTask { try? await Task.sleep(for: limit) }
            _ = await group.next()
            group.cancelAll()
        }
        return isOpen
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
