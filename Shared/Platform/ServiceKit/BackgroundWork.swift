/// Work a request or a job starts and does not wait for (publishing a committed audit record, re-enrolling a confident
/// login's probe for a model migration), run as child tasks of this service: its shutdown lets everything submitted
/// before it finish. It stops after the parts that submit work and before the producer the work sends with.
public final class BackgroundWork: Service {
    public let name = "background-work"
    private let stream: AsyncStream<@Sendable () async -> Void>
    private let queue: AsyncStream<@Sendable () async -> Void>.Continuation

    public init() {
        (stream, queue) = AsyncStream.makeStream()
    }

    /// Runs `work` soon, in the caller's trace; dropped once the shutdown has begun.
    public func submit(_ work: @escaping @Sendable () async -> Void) {
        let trace = TraceContext.current
        queue.yield { await TraceContext.$current.withValue(trace) { await work() } }
    }

    public func run(_ context: ServiceContext) async throws {
        context.ready()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [queue] in
                await context.shutdownRequested()
                queue.finish()
            }
            for await work in stream { group.addTask { await work() } }
        }
    }
}
