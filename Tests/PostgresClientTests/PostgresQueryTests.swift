import Foundation
import PostgresClient
import Testing

@Suite struct PostgresQueryTests {
    @Test func interpolatedValuesBecomeParameters() {
        let name = "x'; DROP TABLE users; --"
        let limit = 5
        let query: PostgresQuery = "SELECT * FROM \(unsafeRaw: "users") WHERE name = \(name) LIMIT \(limit)"
        #expect(query.sql == "SELECT * FROM users WHERE name = $1 LIMIT $2")
        #expect(query.binds.count == 2)
        #expect(!query.description.contains("DROP"))
    }

    /// A fragment appended to a query keeps its values, numbered on after the query's, and `$` that is no placeholder.
    @Test func anAppendedFragmentsParametersAreNumberedOn() async throws {
        var query: PostgresQuery = "SELECT \(1) AS a, "
        query.append("\(2) + \(3) AS b, '$x' AS c")
        #expect(query.sql == "SELECT $1 AS a, $2 + $3 AS b, '$x' AS c" && query.binds.count == 3)
        try await withTestDatabase { database in
            let row = try #require(try await database.pool.query(query).first)
            #expect(try row.decode("a", as: Int.self) == 1 && row.decode("b", as: Int.self) == 5 && row.decode("c", as: String.self) == "$x")
        }
    }

    @Test func injectionAttemptStaysData() async throws {
        try await withTestDatabase { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE users (id serial PRIMARY KEY, name text NOT NULL)")
            let attacks = [
                "'; DROP TABLE users; --",
                "Robert'); DROP TABLE students;--",
                "' OR '1'='1",
                "$1",
                "\\'; SELECT pg_sleep(10); --",
                "$$; DROP TABLE users; $$",
            ]
            for attack in attacks {
                _ = try await pool.query("INSERT INTO users (name) VALUES (\(attack))")
            }
            for attack in attacks {
                let rows = try await pool.query("SELECT name FROM users WHERE name = \(attack)")
                #expect(rows.count == 1)
                #expect(try rows.first?.decode("name", as: String.self) == attack)
            }
            let total = try await pool.query("SELECT count(*) AS n FROM users")
            #expect(try total.first?.decode("n", as: Int.self) == attacks.count)
            // A value that would widen a WHERE clause if it were spliced in matches nothing.
            let none = try await pool.query("SELECT name FROM users WHERE name = \("x' OR 'x'='x")")
            #expect(none.count == 0)
        }
    }

    @Test func explicitPlaceholdersTakeTheirBinds() async throws {
        try await withTestDatabase { database in
            let row = try await database.pool.query(
                PostgresQuery(unsafeSQL: "SELECT $1::text || $2::text AS joined, $3::int8 + 1 AS next", binds: ["a", "b", 41])
            ).first!
            #expect(try row.decode("joined", as: String.self) == "ab")
            #expect(try row.decode("next", as: Int.self) == 42)
        }
    }

    @Test func uniqueViolationSurfaces23505WithoutLeakingTheValue() async throws {
        try await withTestDatabase { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE accounts (email text CONSTRAINT accounts_email_key UNIQUE)")
            let email = "alice.secret@example.com"
            let first = try await pool.query("INSERT INTO accounts VALUES (\(email))")
            #expect(first.affectedRows == 1)
            let error = await #expect(throws: PostgresError.self) {
                try await pool.query("INSERT INTO accounts VALUES (\(email))")
            }
            #expect(error?.sqlState == "23505")
            #expect(error?.isUniqueViolation == true)
            #expect(error?.kind == .server)
            #expect(error?.isRetriable == false)
            #expect(error?.isConnectionFailure == false)
            #expect(error?.constraintName == "accounts_email_key")
            #expect(error?.tableName == "accounts")
            #expect(error?.description.contains("23505") == true)
            #expect(error?.description.contains(email) == false)
            #expect(error?.debugDescription.contains("already exists") == true)
            #expect(error?.debugDescription.contains("INSERT INTO accounts") == true)
            #expect(error?.file.hasSuffix("PostgresQueryTests.swift") == true)
        }
    }

    @Test func syntaxErrorCarriesSQLStateAndPoolStaysUsable() async throws {
        try await withTestDatabase(poolSize: 1) { database in
            let error = await #expect(throws: PostgresError.self) { try await database.pool.query("SELEC 1") }
            #expect(error?.sqlState == "42601")
            let row = try await database.pool.query("SELECT 1::int4 AS one").first
            #expect(try row?.decode("one", as: Int.self) == 1)
        }
    }

    @Test func reportsAffectedRows() async throws {
        try await withTestDatabase { database in
            let pool = database.pool
            _ = try await pool.query("CREATE TABLE items (n int4)")
            let inserted = try await pool.query("INSERT INTO items SELECT generate_series(1, 7)")
            #expect(inserted.affectedRows == 7)
            let updated = try await pool.query("UPDATE items SET n = n + 1 WHERE n > \(Int32(4))")
            #expect(updated.affectedRows == 3)
            #expect(updated.commandTag == "UPDATE 3")
            let deleted = try await pool.query("DELETE FROM items")
            #expect(deleted.affectedRows == 7)
        }
    }
}
