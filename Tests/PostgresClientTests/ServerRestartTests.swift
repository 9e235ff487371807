import PostgresClient
import Testing

@Suite struct ServerRestartTests {
    private func backendPIDs(_ pool: PostgresPool, count: Int) async throws -> Set<Int> {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask {
                    // The sleep keeps each connection busy so every task gets its own.
                    try await pool.query("SELECT pg_backend_pid() AS pid, pg_sleep(0.2)::text AS slept").first!
                        .decode("pid", as: Int.self)
                }
            }
            return try await group.reduce(into: []) { $0.insert($1) }
        }
    }

    @Test func poolRecoversAfterServerRestart() async throws {
        try await withPrivateCluster { cluster in
            var configuration = cluster.configuration
            configuration.poolSize = 2
            let pool = PostgresPool(configuration: configuration)
            let before = try await backendPIDs(pool, count: 2)
            #expect(before.count == 2)

            try await cluster.stop()
            try await cluster.start()

            // Both pooled connections died with the old server; the next queries succeed regardless.
            let after = try await backendPIDs(pool, count: 2)
            #expect(after.count == 2)
            #expect(after.isDisjoint(with: before))

            // While the server is down, a query fails as a connection failure; once it is back, queries work again.
            try await cluster.stop()
            let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
            #expect(error?.isConnectionFailure == true)
            #expect(await pool.isHealthy() == false)
            try await cluster.start()
            #expect(try await pool.query("SELECT 1::int4 AS one").first?.decode("one", as: Int.self) == 1)
            #expect(await pool.isHealthy())
            await pool.close()
        }
    }

    @Test func transactionInterruptedByRestartIsRetriedOnANewConnection() async throws {
        try await withPrivateCluster { cluster in
            var configuration = cluster.configuration
            configuration.poolSize = 1
            let pool = PostgresPool(configuration: configuration)
            _ = try await pool.query("CREATE TABLE marks (attempt int8)")
            let attempts = Counter()
            try await pool.withTransaction { connection in
                let attempt = attempts.increment()
                _ = try await connection.query("INSERT INTO marks VALUES (\(attempt))")
                if attempt == 1 {
                    try await cluster.stop()
                    try await cluster.start()
                }
                _ = try await connection.query("INSERT INTO marks VALUES (\(attempt))")
            }
            #expect(attempts.current == 2)
            let marks = try await pool.query("SELECT attempt FROM marks").map { try $0.decode("attempt", as: Int.self) }
            #expect(marks == [2, 2])
            await pool.close()
        }
    }
}
