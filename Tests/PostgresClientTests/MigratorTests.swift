import PostgresClient
import Testing

@Suite struct MigratorTests {
    private let migrations = [
        Migration(version: 2, name: "seed", sql: "INSERT INTO counter VALUES (1); INSERT INTO counter VALUES (2);"),
        Migration(version: 1, name: "counter", sql: "CREATE TABLE counter (n int4 NOT NULL);"),
    ]

    @Test func appliesOnceAndSecondRunIsNoOp() async throws {
        try await withTestDatabase { database in
            let first = try await Migrator.migrate(pool: database.pool, migrations: migrations)
            #expect(first == [1, 2])
            let second = try await Migrator.migrate(pool: database.pool, migrations: migrations)
            #expect(second == [])
            let rows = try await database.pool.query("SELECT count(*) AS n FROM counter")
            #expect(try rows.first?.decode("n", as: Int.self) == 2)
            let recorded = try await database.pool.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
            #expect(try recorded.map { try $0.decode("name", as: String.self) } == ["counter", "seed"])
            #expect(try recorded.first?.decode("checksum", as: String.self).count == 64)

            let third = try await Migrator.migrate(
                pool: database.pool,
                migrations: migrations + [Migration(version: 3, name: "more", sql: "INSERT INTO counter VALUES (3)")])
            #expect(third == [3])
        }
    }

    @Test func editedAppliedMigrationIsRefused() async throws {
        try await withTestDatabase { database in
            _ = try await Migrator.migrate(pool: database.pool, migrations: migrations)
            var edited = migrations
            edited[1].sql = "CREATE TABLE counter (n int8 NOT NULL);"
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator.migrate(pool: database.pool, migrations: edited)
            }
            guard case .checksumMismatch = error?.reason else {
                Issue.record("expected a checksum mismatch, got \(String(describing: error))")
                return
            }
            #expect(error?.version == 1)
        }
    }

    @Test func failingMigrationLeavesNothingBehind() async throws {
        try await withTestDatabase { database in
            let broken = migrations + [
                Migration(version: 3, name: "broken", sql: "CREATE TABLE half (x int); SELECT * FROM no_such_table;")
            ]
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator.migrate(pool: database.pool, migrations: broken)
            }
            guard case .failed(let cause) = error?.reason else {
                Issue.record("expected a failed migration, got \(String(describing: error))")
                return
            }
            #expect(cause.sqlState == "42P01")
            #expect(error?.version == 3)
            let half = try await database.pool.query("SELECT to_regclass('half') IS NULL AS absent").first
            #expect(try half?.decode("absent", as: Bool.self) == true)
            let versions = try await database.pool.query("SELECT version FROM schema_migrations ORDER BY version")
            #expect(try versions.map { try $0.decode("version", as: Int.self) } == [1, 2])
        }
    }

    @Test func rejectsDuplicateVersions() async throws {
        try await withTestDatabase { database in
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator.migrate(pool: database.pool, migrations: migrations + [Migration(version: 1, name: "again", sql: "SELECT 1")])
            }
            guard case .invalidVersion = error?.reason else {
                Issue.record("expected invalid version, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func concurrentMigratorsApplyEachMigrationExactlyOnce() async throws {
        try await withTestDatabase { database in
            // A slow migration keeps the lock long enough for the other migrator to queue behind it.
            let slow = [
                Migration(version: 1, name: "counter", sql: "CREATE TABLE counter (n int4 NOT NULL);"),
                Migration(version: 2, name: "slow seed", sql: "INSERT INTO counter VALUES (1); SELECT pg_sleep(0.5);"),
            ]
            let poolA = PostgresPool(configuration: database.configuration)
            let poolB = PostgresPool(configuration: database.configuration)
            async let a = Migrator.migrate(pool: poolA, migrations: slow)
            async let b = Migrator.migrate(pool: poolB, migrations: slow)
            let (appliedA, appliedB) = try await (a, b)
            await poolA.close()
            await poolB.close()
            #expect(Set(appliedA + appliedB) == [1, 2])
            #expect(appliedA.isEmpty || appliedB.isEmpty, "one migrator should have found everything applied: \(appliedA) \(appliedB)")
            let rows = try await database.pool.query("SELECT count(*) AS n FROM counter")
            #expect(try rows.first?.decode("n", as: Int.self) == 1)
        }
    }
}
