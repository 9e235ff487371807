import ServiceKit

/// Runs `services` in a service group of their own, as a process would, while `body` runs; then stops the group and
/// checks that it stopped for that reason (a part that ended on its own makes this throw `ServiceFailed`).
public func whileRunning<T: Sendable>(_ services: [any Service], _ body: () async throws -> T) async throws -> T {
    let group = ServiceGroup(services: services, logger: Logger(label: "test", level: .error), shutdownTimeout: .seconds(10))
    let run = Task { try await group.run(handleSignals: false) }
    await group.started()
    let result: T
    do {
        result = try await body()
    } catch {
        group.requestStop(reason: "test failed")
        _ = try? await run.value
        throw error
    }
    group.requestStop(reason: "test finished")
    _ = try await run.value
    return result
}
