import Foundation
import PostgresClient
import Testing

private struct StopReading: Error {}

@Suite struct PostgresStreamingTests {
    /// 600-byte templates whose first four bytes are the id, big-endian.
    private func createTemplates(_ pool: PostgresPool, count: Int) async throws {
        _ = try await pool.query("CREATE TABLE templates (id int8 PRIMARY KEY, embedding bytea NOT NULL)")
        _ = try await pool.query(
            """
            INSERT INTO templates
            SELECT g, decode(lpad(to_hex(g), 8, '0') || repeat('ab', 596), 'hex') FROM generate_series(1, \(count)) g
            """)
    }

    @Test func streamsEveryRowOfALargeResult() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            try await createTemplates(pool, count: 20_000)
            var seen = 0
            var idSum = 0
            try await pool.forEachRow("SELECT id, embedding FROM templates ORDER BY id") { row in
                let id = try row.decode("id", as: Int.self)
                let embedding = try row.decode("embedding", as: [UInt8].self)
                #expect(embedding.count == 600)
                let prefix = embedding.prefix(4).reduce(0) { $0 << 8 | Int($1) }
                if prefix != id { Issue.record("row \(id) carries the bytes of \(prefix)") }
                seen += 1
                idSum += id
            }
            #expect(seen == 20_000)
            #expect(idSum == 20_000 * 20_001 / 2)
        }
    }

    @Test func streamingNothingCallsBodyNever() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            try await createTemplates(database.pool, count: 3)
            var calls = 0
            try await database.pool.forEachRow("SELECT id FROM templates WHERE id > \(100)") { _ in calls += 1 }
            #expect(calls == 0)
        }
    }

    @Test func stoppingEarlyLeavesTheConnectionUsable() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            try await createTemplates(pool, count: 50_000)
            var seen = 0
            await #expect(throws: StopReading.self) {
                try await pool.forEachRow("SELECT id, embedding FROM templates ORDER BY id") { _ in
                    seen += 1
                    if seen == 2_500 { throw StopReading() }
                }
            }
            #expect(seen == 2_500)
            // Same single connection: no leftover rows, no open statement.
            let count = try await pool.query("SELECT count(*) AS n FROM templates").first
            #expect(try count?.decode("n", as: Int.self) == 50_000)
        }
    }

    @Test func streamingErrorCarriesSQLState() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let pool = database.pool
            var seen = 0
            let error = await #expect(throws: PostgresError.self) {
                // Fails part-way, after rows were already delivered.
                try await pool.forEachRow("SELECT 10 / (5000 - g) AS q FROM generate_series(1, 10000) g") { _ in seen += 1 }
            }
            #expect(error?.sqlState == "22012")
            #expect(seen < 10_000)
            let one = try await pool.query("SELECT 1::int4 AS one").first?.decode("one", as: Int.self)
            #expect(one == 1)
        }
    }
}
