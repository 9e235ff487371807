import Foundation
@testable import PostgresClient
import Synchronization
import Testing

private struct DeliberateFailure: Error {}

@Suite struct PostgresPoolTests {
    @Test func transactionCommitsItsWork() async throws {
        try await withTestDatabase { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE events (n int8)")
            let inserted = try await pool.withTransaction { connection in
                _ = try await connection.query("INSERT INTO events VALUES (\(1)), (\(2))")
                return try await connection.query("SELECT count(*) AS n FROM events").first!.decode("n", as: Int.self)
            }
            #expect(inserted == 2)
            #expect(try await pool.query("SELECT count(*) AS n FROM events").first?.decode("n", as: Int.self) == 2)
        }
    }

    @Test func transactionRollsBackOnThrownError() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE events (n int8)")
            await #expect(throws: DeliberateFailure.self) {
                try await pool.withTransaction { connection in
                    _ = try await connection.query("INSERT INTO events VALUES (\(1))")
                    throw DeliberateFailure()
                }
            }
            // The single pooled connection came back outside any transaction and the insert is gone.
            #expect(try await pool.query("SELECT count(*) AS n FROM events").first?.decode("n", as: Int.self) == 0)
            // SAVEPOINT is refused outside a transaction block: proof that none was left open.
            let outside = await #expect(throws: PostgresError.self) { try await pool.query("SAVEPOINT probe") }
            #expect(outside?.sqlState == "25P01")
        }
    }

    @Test func commitOfFailedTransactionThrows() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE events (n int8 PRIMARY KEY)")
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withTransaction { connection in
                    _ = try await connection.query("INSERT INTO events VALUES (\(1))")
                    _ = try? await connection.query("INSERT INTO events VALUES (\(1))")  // swallowed 23505
                }
            }
            #expect(error?.sqlState == "25P02")
            // The one connection came back to the pool once, not twice (two borrowers would then share it).
            #expect(pool.statistics.open == 1)
            #expect(pool.statistics.idle == 1)
            #expect(try await pool.query("SELECT count(*) AS n FROM events").first?.decode("n", as: Int.self) == 0)
        }
    }

    /// A scope's values hold for every statement of the task, with SET LOCAL: a value named mid-scope counts from
    /// the next statement on, and nothing leaks to the pooled connection's next borrower.
    @Test func scopeSettingsAreSetLocallyInEveryStatement() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            let read: PostgresQuery = "SELECT coalesce(current_setting('app.tenant', true), '') AS v"
            let scope = PostgresScope(["app.tenant": "first"])
            try await PostgresScope.$current.withValue(scope) {
                #expect(try await pool.query(read).first?.decode("v", as: String.self) == "first")
                scope.set("app.tenant", to: "second")
                #expect(try await pool.withTransaction { try await $0.query(read).first!.decode("v", as: String.self) } == "second")
                var streamed: [String] = []
                try await pool.forEachRow(read) { streamed.append(try $0.decode("v", as: String.self)) }
                #expect(streamed == ["second"])
            }
            #expect(try await pool.query(read).first?.decode("v", as: String.self) == "", "the value ended with its transaction")
        }
    }

    /// A statement under a scope is one transaction sent as one pipeline (BEGIN, SET LOCAL, the statement, COMMIT): its
    /// write commits, a value larger than libpq's send buffer goes through, and a failing statement throws the
    /// server's error and leaves nothing open on the pooled connection for its next borrower.
    @Test func aScopedStatementCommitsOrFailsAsOneTransaction() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE notes (id int4 PRIMARY KEY, tenant text, body bytea)")
            let photo = [UInt8](repeating: 7, count: 1 << 20)
            try await PostgresScope.$current.withValue(PostgresScope(["app.tenant": "first"])) {
                let inserted = try await pool.query(
                    "INSERT INTO notes VALUES (\(1), current_setting('app.tenant'), \(photo)) RETURNING length(body) AS n")
                #expect(try inserted.first?.decode("n", as: Int.self) == photo.count)
                let error = await #expect(throws: PostgresError.self) {
                    try await pool.query("INSERT INTO notes VALUES (\(1), 'again', NULL)")
                }
                #expect(error?.sqlState == "23505")
                #expect(error?.isConnectionFailure == false)
                #expect(try await pool.query("SELECT tenant FROM notes").map { try $0.decode("tenant", as: String.self) } == ["first"])
            }
            // SAVEPOINT outside a transaction block is refused (25P01): the next borrower is in none.
            let outside = await #expect(throws: PostgresError.self) { try await pool.query("SAVEPOINT probe") }
            #expect(outside?.sqlState == "25P01", "no transaction was left open")
            let tenant = try await pool.query("SELECT current_setting('app.tenant', true) AS tenant").first
            #expect(try tenant?.decode("tenant", as: String?.self) ?? "" == "")
        }
    }

    /// The pool counts its round trips and the time spent in them (what `facegate_db_round_trip_seconds_total` publishes).
    @Test func aRoundTripsTimeIsCounted() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            let before = pool.statistics
            _ = try await pool.query("SELECT pg_sleep(0.05)")
            let after = pool.statistics
            #expect(after.roundTrips - before.roundTrips == 1)
            #expect(after.roundTripSeconds - before.roundTripSeconds >= 0.05)
            #expect(after.roundTripSeconds - before.roundTripSeconds < 5)
        }
    }

    /// Statements sent together are one transaction in one round trip: their rows come back in order, and when one fails
    /// none of them is kept.
    @Test func statementsSentTogetherAreOneTransactionInOneRoundTrip() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE notes (id int4 PRIMARY KEY)")
            let before = pool.statistics.roundTrips
            let rows = try await pool.query(["INSERT INTO notes VALUES (\(1)) RETURNING id", "INSERT INTO notes VALUES (\(2)) RETURNING id"])
            #expect(pool.statistics.roundTrips - before == 1)
            #expect(try rows.map { try $0.first?.decode("id", as: Int.self) } == [1, 2])
            let error = await #expect(throws: PostgresError.self) {
                try await pool.query(["INSERT INTO notes VALUES (\(3))", "INSERT INTO notes VALUES (\(1))"])
            }
            #expect(error?.sqlState == "23505")
            #expect(try await pool.query("SELECT id FROM notes ORDER BY id").map { try $0.decode("id", as: Int.self) } == [1, 2])
        }
    }

    /// Steps of three stores on one pool are one transaction in one round trip, each answered from its own rows; when one
    /// fails none is kept. A computed step among them (a store kept in memory) runs them one after another.
    @Test func stepsOfOnePoolGoTogetherInOneRoundTrip() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE notes (id int4 PRIMARY KEY)")
            func inserting(_ id: Int) -> PostgresStep<Int> {
                PostgresStep(pool, "INSERT INTO notes VALUES (\(id)) RETURNING id") { rows in try rows.first?.decode("id", as: Int.self) ?? -1 }
            }
            let counting = PostgresStep(pool, "SELECT count(*)::int4 AS n FROM notes") { rows in try rows.first?.decode("n", as: Int.self) ?? -1 }
            let before = pool.statistics.roundTrips
            let (first, second, count) = try await PostgresStep.together(inserting(1), inserting(2), counting)
            #expect(pool.statistics.roundTrips - before == 1)
            #expect(first == 1 && second == 2 && count == 2, "each statement sees the ones before it")
            let error = await #expect(throws: PostgresError.self) { try await PostgresStep.together(inserting(3), inserting(1), counting) }
            #expect(error?.sqlState == "23505")
            let computed = PostgresStep<Int>.computed { 7 }
            let mixed = try await PostgresStep.together(inserting(4), computed, counting)
            #expect(mixed == (4, 7, 3), "note 3 was rolled back with the failed step")

            // A step sent before another (`then`) travels with it. Its refusal names its own failure, recognised by what the
            // server says (here the key's value; a spent token id by its table), and the others' failures stay as they are.
            struct Duplicate: Error { let id: Int }
            func claiming(_ id: Int) -> PostgresStep<Void> {
                PostgresStep(pool, "INSERT INTO notes VALUES (\(id))") { _ in }
                    .refusing { $0.sqlState == "23505" && $0.detail?.contains("=(\(id))") == true ? Duplicate(id: id) : nil }
            }
            let trips = pool.statistics.roundTrips
            let joined = try await PostgresStep.together(claiming(5).then(inserting(6)), inserting(7), counting)
            #expect(pool.statistics.roundTrips - trips == 1)
            #expect(joined == (6, 7, 6))
            let refused = await #expect(throws: Duplicate.self) { try await PostgresStep.together(claiming(5).then(inserting(8)), inserting(9), counting) }
            #expect(refused?.id == 5)
            let other = await #expect(throws: PostgresError.self) { try await PostgresStep.together(claiming(10).then(inserting(6)), inserting(11), counting) }
            #expect(other?.sqlState == "23505", "a failure the refusal does not name stays the server's")
            #expect(try await counting.run() == 6, "neither failed batch kept a note")
            let mapped = await #expect(throws: Duplicate.self) { try await claiming(5).mappingError { Duplicate(id: ($0 as? Duplicate)?.id ?? 0 + 100) }.run() }
            #expect(mapped?.id == 5)
        }
    }

    /// A read-then-write is one transaction in two round trips: the write is made of what the read returned, and a write
    /// that fails takes the read's effect with it and leaves no transaction open.
    @Test func aReadThenWriteIsOneTransactionInTwoRoundTrips() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE counters (id int4 PRIMARY KEY, n int4 NOT NULL)")
            let before = pool.statistics.roundTrips
            let next = try await pool.readThenWrite("INSERT INTO counters VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = counters.n RETURNING n") { rows in
                let next = try (rows.first?.decode("n", as: Int.self) ?? -1) + 1
                return (["UPDATE counters SET n = \(next) WHERE id = \(1)"], next)
            }
            #expect(next == 1 && pool.statistics.roundTrips - before == 2)
            let error = await #expect(throws: PostgresError.self) {
                try await pool.readThenWrite("INSERT INTO counters VALUES (2, 0) RETURNING n") { _ in (["INSERT INTO counters VALUES (1, 5)"], ()) }
            }
            #expect(error?.sqlState == "23505")
            #expect(try await pool.query("SELECT n FROM counters ORDER BY id").map { try $0.decode("n", as: Int.self) } == [1])
            try await pool.readThenWrite("INSERT INTO counters VALUES (3, 7) RETURNING n") { _ in ([], ()) }
            #expect(try await pool.query("SELECT n FROM counters WHERE id = 3").first?.decode("n", as: Int.self) == 7,
                    "a read with nothing to write after it is committed")
            let outside = await #expect(throws: PostgresError.self) { try await pool.query("SAVEPOINT probe") }
            #expect(outside?.sqlState == "25P01", "no transaction was left open")
        }
    }

    @Test func cancellingAScopedStatementCancelsIt() async throws {
        try await Self.cancellingASleepCancelsIt(scope: PostgresScope(["app.tenant": "first"]))
    }

    @Test func withConnectionRollsBackWhatTheBorrowerLeftOpen() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE events (n int8)")
            try await pool.withConnection { connection in
                _ = try await connection.query("BEGIN")
                _ = try await connection.query("INSERT INTO events VALUES (\(1))")
            }
            #expect(try await pool.query("SELECT count(*) AS n FROM events").first?.decode("n", as: Int.self) == 0)
        }
    }

    @Test func serializationFailureIsRetried() async throws {
        try await withTestDatabase(poolSize: 2) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE ledger (n int8)")
            let attempts = Counter()
            let readers = Counter()
            // Both transactions read the table before either writes: a write-skew serializable must refuse.
            @Sendable func appendCount() async throws {
                let ownAttempts = Counter()
                try await pool.withTransaction(isolation: .serializable) { connection in
                    attempts.increment()
                    let seen = try await connection.query("SELECT count(*) AS n FROM ledger").first!.decode("n", as: Int.self)
                    if ownAttempts.increment() == 1 {
                        readers.increment()
                        let deadline = ContinuousClock.now + .seconds(10)
                        while readers.current < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
                    }
                    _ = try await connection.query("INSERT INTO ledger VALUES (\(seen))")
                }
            }
            async let a: Void = appendCount()
            async let b: Void = appendCount()
            _ = try await (a, b)
            #expect(attempts.current >= 3, "one transaction should have failed with 40001 and run again")
            let values = try await pool.query("SELECT n FROM ledger ORDER BY n").map { try $0.decode("n", as: Int.self) }
            #expect(values == [0, 1])
        }
    }

    @Test func serializationFailureSurfacesWhenAttemptsRunOut() async throws {
        try await withTestDatabase(poolSize: 2) { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE ledger (n int8)")
            let readers = Counter()
            @Sendable func appendCount() async throws {
                try await pool.withTransaction(isolation: .serializable, maxAttempts: 1) { connection in
                    let seen = try await connection.query("SELECT count(*) AS n FROM ledger").first!.decode("n", as: Int.self)
                    readers.increment()
                    let deadline = ContinuousClock.now + .seconds(10)
                    while readers.current < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
                    _ = try await connection.query("INSERT INTO ledger VALUES (\(seen))")
                }
            }
            @Sendable func failure() async -> PostgresError? {
                do {
                    try await appendCount()
                    return nil
                } catch {
                    return error as? PostgresError
                }
            }
            async let a = failure()
            async let b = failure()
            let failures = await [a, b].compactMap { $0 }
            #expect(failures.count == 1)
            #expect(failures.first?.isSerializationFailure == true)
            #expect(failures.first?.isRetriable == true)
        }
    }

    @Test func poolServesFiftyConcurrentQueriesWithFourConnections() async throws {
        let applicationName = "pooltest_\(UInt32.random(in: 0...UInt32.max))"
        try await withTestDatabase(poolSize: 4, configure: { $0.applicationName = applicationName }) { database in
            let pool = database.pool
            let results = try await withThrowingTaskGroup(of: (Int, Int, Int).self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let row = try await pool.query(
                            """
                            SELECT \(index) AS i, pg_sleep(0.02)::text AS slept,
                                   (SELECT count(*) FROM pg_stat_activity WHERE application_name = \(applicationName)) AS open
                            """
                        ).first!
                        return (index, try row.decode("i", as: Int.self), try row.decode("open", as: Int.self))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 50)
            #expect(results.allSatisfy { $0.0 == $0.1 })
            let mostOpen = results.map(\.2).max() ?? 0
            #expect(mostOpen <= 4)
            #expect(mostOpen >= 2, "queries should have overlapped on several connections")
            let admin = PostgresPool(configuration: try TestServer.adminConfiguration())
            let open = try await admin.query(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = \(applicationName)")
            await admin.close()
            #expect(try open.first?.decode("n", as: Int.self) == 4)
        }
    }

    @Test func waitersAreServedInArrivalOrder() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            let order = Recorder()
            let held = try await pool.acquire()
            var tasks: [Task<Void, any Error>] = []
            for index in 0..<5 {
                tasks.append(Task {
                    _ = try await pool.withConnection { _ in order.append(index) }
                })
                // Wait until this task is queued before starting the next, so arrival order is known.
                while pool.waiterCount < index + 1 { try await Task.sleep(for: .milliseconds(2)) }
            }
            await pool.release(held)
            for task in tasks { try await task.value }
            #expect(order.values == [0, 1, 2, 3, 4])
        }
    }

    @Test func statementTimeoutSurfaces57014() async throws {
        try await withTestDatabase(poolSize: 1, configure: { $0.statementTimeoutMilliseconds = 200 }) { database in
            let error = await #expect(throws: PostgresError.self) {
                try await database.pool.query("SELECT pg_sleep(5)")
            }
            #expect(error?.sqlState == "57014")
            #expect(error?.isQueryCanceled == true)
            #expect(error?.isConnectionFailure == false)
            let row = try await database.pool.query("SELECT current_setting('statement_timeout') AS t").first
            #expect(try row?.decode("t", as: String.self) == "200ms")
        }
    }

    @Test func cancellingTheTaskCancelsTheStatement() async throws {
        try await Self.cancellingASleepCancelsIt(scope: nil)
    }

    /// A task sleeping in a statement (under `scope`, if any) is cancelled once the server runs it: the statement ends
    /// with 57014 and the connection serves the next one.
    private static func cancellingASleepCancelsIt(scope: PostgresScope?) async throws {
        try await withTestDatabase(poolSize: 1, configure: { $0.statementTimeoutMilliseconds = 0 }) { database in
            let pool = database.pool
            let sleeper = Task { try await PostgresScope.$current.withValue(scope) { try await pool.query("SELECT pg_sleep(60)") } }
            // Cancel once the statement is running on the server.
            let deadline = ContinuousClock.now + .seconds(20)
            let admin = PostgresPool(configuration: try TestServer.adminConfiguration())
            while ContinuousClock.now < deadline {
                let running = try await admin.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND datname = \(database.configuration.database)")
                if try running.first!.decode("n", as: Int.self) == 1 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            await admin.close()
            sleeper.cancel()
            let result = await sleeper.result
            guard case .failure(let error as PostgresError) = result else {
                Issue.record("expected a cancelled statement, got \(result)")
                return
            }
            #expect(error.sqlState == "57014")
            #expect(try await pool.query("SELECT 2::int4 AS two").first?.decode("two", as: Int.self) == 2)
        }
    }

    @Test func unreachableServerFailsAsConnectionFailure() async throws {
        var configuration = PostgresConfiguration(host: "127.0.0.1", port: 1, user: "postgres", database: "postgres")
        configuration.connectTimeoutSeconds = 2
        let pool = PostgresPool(configuration: configuration)
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(error?.kind == .connection)
        #expect(error?.isConnectionFailure == true)
        #expect(error?.isRetriable == true)
        #expect(await pool.isHealthy() == false)
        await pool.close()
        let closed = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(closed?.kind == .poolClosed)
    }

    @Test func healthCheckAnswersForALiveServer() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            #expect(await database.pool.isHealthy())
        }
    }

    @Test func waitingTaskCanBeCancelled() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            let held = try await pool.acquire()
            let waiter = Task { try await pool.query("SELECT 1") }
            while pool.waiterCount < 1 { try await Task.sleep(for: .milliseconds(2)) }
            waiter.cancel()
            let result = await waiter.result
            guard case .failure(let error as PostgresError) = result else {
                Issue.record("expected cancellation, got \(result)")
                return
            }
            #expect(error.kind == .cancelled)
            #expect(pool.waiterCount == 0)
            await pool.release(held)
            #expect(try await pool.query("SELECT 1::int4 AS one").first?.decode("one", as: Int.self) == 1)
        }
    }
}

/// A server that vanishes without closing (a lost host, a dropped NAT mapping) sends no FIN and no RST: only TCP itself
/// can notice. Every connection asks for it: keepalive probes after 30 s of silence, every 10 s, three times, and at most
/// 30 s of unacknowledged data. A silent server cannot be made on loopback here, so these tests read the options off the
/// real connection's socket.
@Suite struct ConnectionKeepaliveTests {
    /// SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT of a connection made with `configuration`.
    func socketOptions(_ configuration: PostgresConfiguration) async throws -> [Int32] {
        let connection = try await PostgresConnection.connect(configuration: configuration)
        let socket = await connection.onQueue { $0.socket }
        #expect(socket >= 0)
        let options = [(SOL_SOCKET, SO_KEEPALIVE), (Int32(IPPROTO_TCP), TCP_KEEPIDLE), (Int32(IPPROTO_TCP), TCP_KEEPINTVL),
                       (Int32(IPPROTO_TCP), TCP_KEEPCNT), (Int32(IPPROTO_TCP), 18 /* TCP_USER_TIMEOUT, linux/tcp.h */)].map { level, name in
            var value: Int32 = -1
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(socket, level, name, &value, &length) == 0 ? value : -1
        }
        await connection.close()
        return options
    }

    @Test func everyConnectionProbesASilentServer() async throws {
        let configuration = try TestServer.adminConfiguration()
        #expect(try await socketOptions(configuration) == [1, 30, 10, 3, 30_000])
        var system = configuration
        system.keepaliveIdleSeconds = 0
        system.tcpUserTimeoutMilliseconds = 0
        // The system's timing: the idle time of /proc/sys/net/ipv4/tcp_keepalive_time (two hours by default), no user timeout.
        let systemIdle = try #require(Int32(try String(contentsOfFile: "/proc/sys/net/ipv4/tcp_keepalive_time", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let options = try await socketOptions(system)
        #expect(options[1] == systemIdle && options[4] == 0, "\(options)")
    }
}
