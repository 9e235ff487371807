/// One versioned schema change. `sql` may hold several statements; it runs inside a transaction the
/// migrator opens, so it must not contain BEGIN/COMMIT or statements that refuse to run in one
/// (`CREATE INDEX CONCURRENTLY`, `VACUUM`).
public struct Migration: Sendable {
    public var version: Int
    public var name: String
    public var sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

public struct MigrationError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable {
        /// Two migrations share a version, or a version is not positive.
        case invalidVersion
        /// An applied migration's SQL has changed since it ran.
        case checksumMismatch
        /// The migration's SQL failed; nothing of it was applied.
        case failed(PostgresError)
        /// The connection holding the migration lock was replaced, so the lock is gone.
        case lockLost
    }

    public var reason: Reason
    public var version: Int
    public var name: String

    public var description: String {
        switch reason {
        case .invalidVersion: "migration \(version) (\(name)): version is duplicated or not positive"
        case .checksumMismatch: "migration \(version) (\(name)) was applied with different SQL; write a new migration instead of editing it"
        case .failed(let error): "migration \(version) (\(name)) failed: \(error)"
        case .lockLost: "migration \(version) (\(name)): the connection holding the migration lock was lost"
        }
    }
}

/// Applies versioned SQL migrations, each once, in version order.
///
/// The applied ones are recorded in `schema_migrations(version, name, checksum, applied_at)`. A
/// session advisory lock serialises concurrent migrators: the second waits, then finds everything
/// applied. Each migration runs in its own transaction without a statement timeout.
public enum Migrator {
    /// Advisory lock key: "FaceGate" in ASCII.
    public static let advisoryLockKey: Int64 = 0x4661_6365_4761_7465

    /// Returns the versions this call applied, in order.
    public static func migrate(pool: PostgresPool, migrations: [Migration]) async throws -> [Int] {
        let ordered = migrations.sorted { $0.version < $1.version }
        for (index, migration) in ordered.enumerated()
        where migration.version <= 0 || (index > 0 && ordered[index - 1].version == migration.version) {
            throw MigrationError(reason: .invalidVersion, version: migration.version, name: migration.name)
        }
        return try await pool.withConnection { connection in
            // Waiting for the lock may outlast statement_timeout; SET LOCAL keeps the change to this transaction.
            _ = try await connection.query("BEGIN")
            _ = try await connection.query("SET LOCAL statement_timeout = 0")
            // The lock belongs to this server session; remember which one holds it.
            let lockHolder = try await connection.query(
                "SELECT pg_advisory_lock(\(advisoryLockKey)), pg_backend_pid() AS pid"
            ).first!.decode("pid", as: Int.self)
            _ = try await connection.query("COMMIT")
            do {
                let applied = try await apply(ordered, on: connection, lockHolder: lockHolder)
                _ = try await connection.query("SELECT pg_advisory_unlock(\(advisoryLockKey))")
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(advisoryLockKey))")
                throw error
            }
        }
    }

    private static func apply(
        _ migrations: [Migration], on connection: PostgresConnection, lockHolder: Int
    ) async throws -> [Int] {
        _ = try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version bigint PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        var appliedChecksums: [Int: String] = [:]
        for row in try await connection.query("SELECT version, checksum FROM schema_migrations") {
            appliedChecksums[try row.decode("version")] = try row.decode("checksum", as: String.self)
        }

        var newlyApplied: [Int] = []
        for migration in migrations {
            let checksum = try await connection.query(
                "SELECT encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex') AS checksum"
            ).first!.decode("checksum", as: String.self)
            if let recorded = appliedChecksums[migration.version] {
                guard recorded == checksum else {
                    throw MigrationError(reason: .checksumMismatch, version: migration.version, name: migration.name)
                }
                continue
            }
            do {
                _ = try await connection.query("BEGIN")
                let pid = try await connection.query("SELECT pg_backend_pid() AS pid").first!.decode("pid", as: Int.self)
                guard pid == lockHolder else {
                    _ = try? await connection.query("ROLLBACK")
                    throw MigrationError(reason: .lockLost, version: migration.version, name: migration.name)
                }
                _ = try await connection.query("SET LOCAL statement_timeout = 0")
                try await connection.executeScript(migration.sql)
                _ = try await connection.query(
                    """
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(checksum))
                    """)
                _ = try await connection.query("COMMIT")
            } catch let error as PostgresError {
                _ = try? await connection.query("ROLLBACK")
                throw MigrationError(reason: .failed(error), version: migration.version, name: migration.name)
            }
            newlyApplied.append(migration.version)
        }
        return newlyApplied
    }
}
