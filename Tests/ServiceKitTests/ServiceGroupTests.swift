import Foundation
import ServiceKit
import Synchronization
import Testing

/// The service group's structure, with parts that record what happens to them: started in order once the one before is
/// ready, shut down in reverse with each finishing first, a part ending on its own stopping the process, loops cancelled
/// by the shutdown, and a shutdown that hangs given up on.
@Suite struct ServiceGroupTests {
    /// What happened, in order, across parts.
    final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func add(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    /// A part that is ready after `startup`, and takes `drain` to finish once asked to shut down.
    final class Part: Service {
        let name: String
        let events: Events
        let startup: Duration
        let drain: Duration
        init(_ name: String, _ events: Events, startup: Duration = .zero, drain: Duration = .zero) {
            (self.name, self.events, self.startup, self.drain) = (name, events, startup, drain)
        }
        func run(_ context: ServiceContext) async throws {
            try await Task.sleep(for: startup)
            events.add("\(name) ready")
            context.ready()
            await context.shutdownRequested()
            events.add("\(name) stopping")
            try await Task.sleep(for: drain)  // not cancelled: a shutdown lets work finish
            events.add("\(name) stopped")
        }
    }

    static let logger = Logger(label: "test", level: .error)

    @Test func partsStartInOrderAndStopInReverseEachFinishingFirst() async throws {
        let events = Events()
        let group = ServiceGroup(services: [Part("a", events, startup: .milliseconds(50), drain: .milliseconds(50)),
                                            Part("b", events, drain: .milliseconds(50)), Part("c", events)],
                                 logger: Self.logger, shutdownTimeout: .seconds(10))
        let run = Task { try await group.run(handleSignals: false) }
        await group.started()
        #expect(events.all == ["a ready", "b ready", "c ready"])
        group.requestStop(reason: "test")
        #expect(try await run.value == "test")
        #expect(events.all.dropFirst(3) == ["c stopping", "c stopped", "b stopping", "b stopped", "a stopping", "a stopped"])
    }

    /// A part that stops on its own (a job loop whose consumer died) stops its whole process with an error, so the
    /// supervisor restarts it, instead of leaving it up and "ready" with nothing consuming; the other parts are shut down.
    @Test func aPartThatEndsOnItsOwnStopsTheGroup() async throws {
        final class EndsOnItsOwn: Service {
            let name = "face-jobs"
            func run(_ context: ServiceContext) async throws {
                context.ready()
                try await Task.sleep(for: .milliseconds(200))
                throw CancellationError()
            }
        }
        let events = Events()
        let group = ServiceGroup(services: [Part("admin", events), EndsOnItsOwn()], logger: Self.logger, shutdownTimeout: .seconds(5))
        let started = ContinuousClock.now
        await #expect(throws: ServiceFailed.self) { try await group.run(handleSignals: false) }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(events.all == ["admin ready", "admin stopping", "admin stopped"])
        // Without a failure, the group stops only when asked, and says why.
        let calm = ServiceGroup(services: [], logger: Self.logger, shutdownTimeout: .seconds(5))
        calm.requestStop(reason: "test")
        #expect(try await calm.run(handleSignals: false) == "test")
    }

    /// A part that fails before it is ready stops the start: the parts after it never start, those before are shut down.
    @Test func aPartThatFailsToStartStopsTheStart() async throws {
        final class Unreachable: Service {
            let name = "topics"
            func run(_ context: ServiceContext) async throws { throw CancellationError() }
        }
        let events = Events()
        let group = ServiceGroup(services: [Part("admin", events), Unreachable(), Part("jobs", events)], logger: Self.logger,
                                 shutdownTimeout: .seconds(5))
        await #expect(throws: ServiceFailed.self) { try await group.run(handleSignals: false) }
        #expect(events.all == ["admin ready", "admin stopping", "admin stopped"])
    }

    /// Loops run under `cancellingOnShutdown` end at the shutdown, by cancellation.
    @Test func theShutdownCancelsAPartsLoops() async throws {
        final class Looping: Service {
            let name = "sweeper"
            let rounds = Atomic<Int>(0)
            let cancelled = Atomic<Bool>(false)
            func run(_ context: ServiceContext) async throws {
                context.ready()
                let ended = try await context.cancellingOnShutdown { [self] in
                    while true {
                        do { try await Task.sleep(for: .milliseconds(10)) } catch {
                            cancelled.store(true, ordering: .relaxed)
                            throw error
                        }
                        rounds.add(1, ordering: .relaxed)
                    }
                }
                #expect(ended == nil)
            }
        }
        let looping = Looping()
        let group = ServiceGroup(services: [looping], logger: Self.logger, shutdownTimeout: .seconds(5))
        let run = Task { try await group.run(handleSignals: false) }
        await group.started()
        try await Task.sleep(for: .milliseconds(100))
        group.requestStop(reason: "test")
        _ = try await run.value
        #expect(looping.rounds.load(ordering: .relaxed) > 0 && looping.cancelled.load(ordering: .relaxed))
    }

    /// Cancelling the task that runs the group stops it as a signal would: `run` returns once the parts have stopped,
    /// though the cancelled task's own waits would end at once.
    @Test func cancellingTheRunningTaskStopsTheGroup() async throws {
        let events = Events()
        let group = ServiceGroup(services: [Part("http", events, drain: .milliseconds(100))], logger: Self.logger, shutdownTimeout: .seconds(5))
        let run = Task { try await group.run(handleSignals: false) }
        await group.started()
        run.cancel()
        #expect(try await run.value == "the task running the group was cancelled")
        #expect(events.all == ["http ready", "http stopping", "http stopped"])
    }

    /// Work submitted to the background runs in its submitter's trace and finishes before the parts started before it
    /// (the producer it publishes with) are told to stop.
    @Test func backgroundWorkKeepsItsTraceAndFinishesBeforeThePartsBeforeIt() async throws {
        let events = Events()
        let background = BackgroundWork()
        let group = ServiceGroup(services: [Part("producer", events), background], logger: Self.logger, shutdownTimeout: .seconds(5))
        let run = Task { try await group.run(handleSignals: false) }
        await group.started()
        let trace = TraceContext.random()
        TraceContext.$current.withValue(trace) {
            background.submit {
                try? await Task.sleep(for: .milliseconds(200))
                events.add("published in trace \(TraceContext.current?.traceId == trace.traceId)")
            }
        }
        group.requestStop(reason: "test")
        _ = try await run.value
        #expect(events.all == ["producer ready", "published in trace true", "producer stopping", "producer stopped"])
    }

    /// A shutdown that does not return is given up on after the group's timeout: the process still ends.
    @Test func aShutdownThatHangsIsAbandonedAfterTheTimeout() async throws {
        let events = Events()
        let group = ServiceGroup(services: [Part("stuck", events, drain: .seconds(3600))], logger: Self.logger,
                                 shutdownTimeout: .milliseconds(300))
        let run = Task { try await group.run(handleSignals: false) }
        await group.started()
        let started = ContinuousClock.now
        group.requestStop(reason: "test")
        #expect(try await run.value == "test")
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(events.all == ["stuck ready", "stuck stopping"])
    }

    /// A stop asked for at any moment around the group starting is never lost.
    @Test func aStopAskedForAtAnyMomentEndsTheRun() async throws {
        let events = Events()
        var lost = 0
        for _ in 0..<500 {
            let group = ServiceGroup(services: [Part("part", events)], logger: Self.logger, shutdownTimeout: .seconds(5))
            let run = Task { try await group.run(handleSignals: false) }
            Task { group.requestStop(reason: "test") }
            if await !finishes(within: .seconds(5), { _ = try? await run.value }) { lost += 1 }
        }
        #expect(lost == 0)
    }
}
