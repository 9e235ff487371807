import Synchronization

public enum PostgresIsolation: Sendable {
    case readCommitted, repeatableRead, serializable

    var beginStatement: PostgresQuery {
        switch self {
        case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
        case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
        case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
        }
    }
}

/// A bounded set of connections shared by concurrent tasks.
///
/// Connections open lazily, up to `configuration.poolSize`. A task that finds them all busy waits
/// its turn (first come, first served). Connections the server dropped are reopened on next use.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration

    /// What a waiting task is handed: a connection, or permission to open one (a slot freed up).
    private enum Grant {
        case connection(PostgresConnection)
        case openSlot
    }

    private struct Waiter {
        let id: UInt64
        let continuation: UnsafeContinuation<Result<Grant, PostgresError>, Never>
    }

    private struct State {
        var idle: [PostgresConnection] = []
        /// Connections open or being opened, lent out or idle.
        var opened = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let roundTrips = RoundTrips()

    /// Connects nothing until the first statement.
    public init(configuration: PostgresConfiguration) {
        self.configuration = configuration
    }

    // MARK: Statements

    public func query(
        _ query: PostgresQuery, file: String = #fileID, line: Int = #line
    ) async throws(PostgresError) -> PostgresRows {
        if let settings = PostgresScope.current?.settings, !settings.isEmpty {
            return try await scoped([query], settings: settings, file: file, line: line)[0]
        }
        return try await unscoped(query, file: file, line: line)
    }

    /// One statement on a pooled connection, in no transaction and under no scope's settings.
    private func unscoped(_ query: PostgresQuery, file: String, line: Int) async throws(PostgresError) -> PostgresRows {
        let connection = try await acquire()
        let result: Result<PostgresRows, PostgresError>
        do {
            result = .success(try await connection.query(query, file: file, line: line))
        } catch {
            result = .failure(error)
        }
        await release(connection)
        return try result.get()
    }

    /// Statements that need no answer from one another, in one transaction of their own (under the scope's settings),
    /// sent together: one round trip for all of them. Their rows, in order; any failure rolls back every one.
    public func query(
        _ queries: [PostgresQuery], file: String = #fileID, line: Int = #line
    ) async throws(PostgresError) -> [PostgresRows] {
        try await scoped(queries, settings: PostgresScope.current?.settings ?? [], file: file, line: line)
    }

    /// A transaction in two round trips, for writes that depend on what it reads: BEGIN with the scope's settings and
    /// `read`, then the statements `write` makes of its rows, with COMMIT. It runs again, as `withTransaction` does, after
    /// a serialization failure, a deadlock or a connection lost before COMMIT was sent, so `write` must have no other
    /// effect.
    public func readThenWrite<T: Sendable>(
        _ read: PostgresQuery, file: String = #fileID, line: Int = #line,
        _ write: (PostgresRows) throws -> (statements: [PostgresQuery], value: T)
    ) async throws -> T {
        let settings = PostgresScope.current?.settings ?? []
        var attempt = 1
        while true {
            let connection = try await acquire()
            var committing = false
            do {
                let rows = try await connection.pipeline(begin: PostgresIsolation.readCommitted.beginStatement, settings: settings, [read],
                                                         commit: false, file: file, line: line)
                let (statements, value) = try write(rows[0])
                committing = true
                if statements.isEmpty {
                    _ = try await connection.query("COMMIT", file: file, line: line)  // the read's effect stands alone
                } else {
                    _ = try await connection.pipeline(begin: nil, settings: [], statements, commit: true, file: file, line: line)
                }
                await release(connection)
                return value
            } catch {
                await release(connection)  // rolls back what the failure left open
                guard attempt < 5, let failure = error as? PostgresError,
                      failure.isSerializationFailure || failure.isDeadlock || (failure.isConnectionFailure && !committing) else { throw error }
                attempt += 1
                try? await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << min(attempt, 6)))))
            }
        }
    }

    /// Statements in a transaction of their own under the scope's settings: BEGIN, SET LOCAL, the statements and COMMIT
    /// in one round trip. Serialization failures, deadlocks and connections that failed before it was sent run it
    /// again, as `withTransaction` does.
    private func scoped(
        _ queries: [PostgresQuery], settings: [(name: String, value: String)], file: String, line: Int
    ) async throws(PostgresError) -> [PostgresRows] {
        var attempt = 1
        while true {
            let connection = try await acquire()
            let result: Result<[PostgresRows], PostgresError>
            do {
                result = .success(try await connection.pipeline(
                    begin: PostgresIsolation.readCommitted.beginStatement, settings: settings, queries, commit: true, file: file, line: line))
            } catch {
                result = .failure(error)
            }
            await release(connection)
            guard case .failure(let failure) = result, attempt < 5,
                  failure.isSerializationFailure || failure.isDeadlock || (failure.isConnectionFailure && failure.wasNotSent) else {
                return try result.get()
            }
            attempt += 1
            try? await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << min(attempt, 6)))))
        }
    }

    /// Streams the rows of a large result to `body` without holding them all in memory.
    public func forEachRow(
        _ query: PostgresQuery, file: String = #fileID, line: Int = #line, _ body: (PostgresRow) throws -> Void
    ) async throws {
        let connection = try await acquire()
        let settings = PostgresScope.current?.settings ?? []
        do {
            if !settings.isEmpty { try await Self.begin(.readCommitted, settings, on: connection, file: file, line: line) }
            try await connection.forEachRow(query, file: file, line: line, body)
            if !settings.isEmpty { _ = try await connection.query("COMMIT", file: file, line: line) }
        } catch {
            await release(connection)
            throw error
        }
        await release(connection)
    }

    /// Lends one connection for the duration of `body`. A transaction `body` leaves open is rolled back.
    public func withConnection<T: Sendable>(
        _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await acquire()
        do {
            let value = try await body(connection)
            await release(connection)
            return value
        } catch {
            await release(connection)
            throw error
        }
    }

    /// Runs `body` inside BEGIN … COMMIT; a thrown error rolls back and is rethrown.
    ///
    /// Serialization failures (40001), deadlocks (40P01) and connections lost before COMMIT was sent
    /// run `body` again on a fresh transaction, up to `maxAttempts` times in all, so `body` must not
    /// have effects outside the database it cannot repeat. A COMMIT that the server turned into a
    /// ROLLBACK (a statement inside failed and the error was caught) throws 25P02.
    public func withTransaction<T: Sendable>(
        isolation: PostgresIsolation = .readCommitted, maxAttempts: Int = 5,
        file: String = #fileID, line: Int = #line,
        _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        var attempt = 1
        while true {
            let connection = try await acquire()
            var committing = false
            let commit: PostgresRows
            let value: T
            do {
                try await Self.begin(isolation, PostgresScope.current?.settings ?? [], on: connection, file: file, line: line)
                value = try await body(connection)
                committing = true
                commit = try await connection.query("COMMIT", file: file, line: line)
            } catch {
                await release(connection)
                guard attempt < maxAttempts, let failure = error as? PostgresError,
                    failure.isSerializationFailure || failure.isDeadlock || (failure.isConnectionFailure && !committing)
                else { throw error }
                attempt += 1
                // Spread the retries of colliding transactions apart.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << min(attempt, 6)))))
                continue
            }
            // Released once, outside the catch that releases a failed attempt's connection.
            await release(connection)
            guard commit.commandTag == "ROLLBACK" else { return value }
            var error = PostgresError(
                kind: .server, message: "the transaction was rolled back because a statement inside it failed",
                sqlState: "25P02", file: file, line: line)
            error.isRetriable = false
            throw error
        }
    }

    /// BEGIN, then the current scope's values with SET LOCAL — in one round trip when the values are plain (names of
    /// letters, digits, `_` and `.`; values without quotes or backslashes, as app ids are), else one statement each.
    private static func begin(
        _ isolation: PostgresIsolation, _ settings: [(name: String, value: String)], on connection: PostgresConnection, file: String, line: Int
    ) async throws(PostgresError) {
        func plain(_ text: String, _ allowed: (Character) -> Bool) -> Bool { !text.isEmpty && text.allSatisfy(allowed) }
        let inline = settings.allSatisfy { setting in
            plain(setting.name) { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ".") }
                && setting.value.allSatisfy { $0.isASCII && $0 != "'" && $0 != "\\" && !$0.isNewline }
        }
        if inline && !settings.isEmpty {
            let sets = settings.map { "SELECT set_config('\($0.name)', '\($0.value)', true);" }.joined(separator: " ")
            do {
                try await connection.executeScript(isolation.beginStatement.description + "; " + sets)
            } catch {
                throw error.located(file: file, line: line)
            }
            return
        }
        _ = try await connection.query(isolation.beginStatement, file: file, line: line)
        for setting in settings {
            _ = try await connection.query("SELECT set_config(\(setting.name), \(setting.value), true)", file: file, line: line)
        }
    }

    /// Sends `NOTIFY channel, payload`, outside any scope's transaction: every `PostgresListener` on the channel hears it.
    public func notify(channel: String, payload: String, file: String = #fileID, line: Int = #line) async throws(PostgresError) {
        _ = try await unscoped("SELECT pg_notify(\(channel), \(payload))", file: file, line: line)
    }

    /// True when `SELECT 1` answers within `timeout`. Returns on time even when every connection is
    /// busy or the server does not answer; the abandoned probe is cancelled.
    public func isHealthy(timeout: Duration = .seconds(2)) async -> Bool {
        let race = HealthCheckRace()
        return await withCheckedContinuation { continuation in
            race.answer.withLock { $0 = continuation }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                race.probe.withLock { $0?.cancel() }
                race.finish(false)
            }
            let probe = Task {
                let rows = try? await self.query("SELECT 1 AS ok")
                timer.cancel()
                race.finish((try? rows?.first?.decode("ok", as: Int32.self)) == 1)
            }
            race.probe.withLock { $0 = probe }
        }
    }

    /// Closes idle connections now and the lent ones as they come back; waiting and later calls fail.
    public func close() async {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            let taken = (state.idle, state.waiters)
            state.opened -= state.idle.count
            state.idle = []
            state.waiters = []
            return taken
        }
        for waiter in waiters { waiter.continuation.resume(returning: .failure(Self.closedError())) }
        for connection in idle { await connection.close() }
    }

    // MARK: Leasing

    func acquire() async throws(PostgresError) -> PostgresConnection {
        let immediate = state.withLock { state in Self.takeWithoutWaiting(&state) }
        let grant: Result<Grant, PostgresError>
        if let immediate {
            grant = immediate
        } else {
            grant = await waitForGrant()
        }
        switch try grant.get() {
        case .connection(let connection): return connection
        case .openSlot: return try await open()
        }
    }

    private static func takeWithoutWaiting(_ state: inout State) -> Result<Grant, PostgresError>? {
        if state.closed { return .failure(closedError()) }
        if let connection = state.idle.popLast() { return .success(.connection(connection)) }
        return nil
    }

    private func waitForGrant() async -> Result<Grant, PostgresError> {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let poolSize = max(1, configuration.poolSize)
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let decided: Result<Grant, PostgresError>? = state.withLock { state in
                    if let taken = Self.takeWithoutWaiting(&state) { return taken }
                    if state.opened < poolSize {
                        state.opened += 1
                        return .success(.openSlot)
                    }
                    // The cancellation handler may already have run and found nothing to remove.
                    if Task.isCancelled {
                        return .failure(PostgresError(kind: .cancelled, message: "cancelled while waiting for a connection"))
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let decided { continuation.resume(returning: decided) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(
                returning: .failure(PostgresError(kind: .cancelled, message: "cancelled while waiting for a connection")))
        }
    }

    private func open() async throws(PostgresError) -> PostgresConnection {
        let connection = PostgresConnection(configuration: configuration, roundTrips: roundTrips)
        if let error = await connection.onQueue({ $0.connect() }) {
            giveUpSlot()
            throw error
        }
        return connection
    }

    /// A slot whose connection could not be opened goes to the next waiter, who tries for itself.
    private func giveUpSlot() {
        let waiter = state.withLock { state -> Waiter? in
            if !state.closed, !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.opened -= 1
            return nil
        }
        waiter?.continuation.resume(returning: .success(.openSlot))
    }

    func release(_ connection: PostgresConnection) async {
        await connection.prepareForReuse()
        let (waiter, closed) = state.withLock { state -> (Waiter?, Bool) in
            if state.closed {
                state.opened -= 1
                return (nil, true)
            }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), false) }
            state.idle.append(connection)
            return (nil, false)
        }
        if let waiter { waiter.continuation.resume(returning: .success(.connection(connection))) }
        if closed { await connection.close() }
    }

    /// Tasks now queued for a connection.
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// What the pool holds now: connections open (lent out or idle), idle, and tasks waiting for one.
    public struct Statistics: Sendable {
        public var open: Int
        public var idle: Int
        public var waiting: Int
        /// Round trips to the server since the pool was made: a statement, or statements sent together as one pipeline.
        public var roundTrips: Int
        /// Seconds spent in those round trips, from sending to the last row.
        public var roundTripSeconds: Double
        public var inUse: Int { open - idle }
    }

    public var statistics: Statistics {
        let (count, seconds) = (roundTrips.total, roundTrips.seconds)
        return state.withLock {
            Statistics(open: $0.opened, idle: $0.idle.count, waiting: $0.waiters.count, roundTrips: count, roundTripSeconds: seconds)
        }
    }

    /// The most connections the pool opens.
    public var capacity: Int { max(1, configuration.poolSize) }

    private static func closedError() -> PostgresError {
        PostgresError(kind: .poolClosed, message: "the connection pool is closed")
    }
}

/// A health probe racing its timeout: whichever ends first answers, once.
private final class HealthCheckRace: Sendable {
    let answer = Mutex<CheckedContinuation<Bool, Never>?>(nil)
    let probe = Mutex<Task<Void, Never>?>(nil)

    func finish(_ healthy: Bool) {
        answer.withLock { pending in
            pending?.resume(returning: healthy)
            pending = nil
        }
    }
}
