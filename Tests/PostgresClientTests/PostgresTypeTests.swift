import Foundation
import PostgresClient
import Testing

@Suite struct PostgresTypeTests {
    @Test func roundTripsEveryTypeIncludingNull() async throws {
        try await withTestDatabase { database in
            let pool = database.pool
            _ = try await pool.query(
                """
                CREATE TABLE samples (
                    id int8 PRIMARY KEY, s text, i int8, i64 int8, i32 int4, i16 int2, d float8, f float4,
                    b bool, u uuid, t timestamptz, bytes bytea, data bytea)
                """)
            let text = "Grüße, 世界 🌍 e\u{301} 'quoted' \"double\" \\ back; -- not a comment"
            let uuid = UUID()
            let instant = Date(timeIntervalSince1970: 1_700_000_000.123456)
            let big = (0..<5_000_000).map { _ in UInt8.random(in: 0...255) }
            let everyByte = Data((0...255).map { UInt8($0) })
            _ = try await pool.query(
                """
                INSERT INTO samples VALUES (1, \(text), \(Int.max), \(Int64.min), \(Int32.min), \(Int16.max),
                    \(-1.25e300), \(Float(3.25)), \(true), \(uuid), \(instant), \(big), \(everyByte))
                """)
            let none: String? = nil
            let noInt: Int? = nil
            let noInt64: Int64? = nil
            let noInt32: Int32? = nil
            let noInt16: Int16? = nil
            let noDouble: Double? = nil
            let noFloat: Float? = nil
            let noBool: Bool? = nil
            let noUUID: UUID? = nil
            let noDate: Date? = nil
            let noBytes: [UInt8]? = nil
            let noData: Data? = nil
            _ = try await pool.query(
                """
                INSERT INTO samples VALUES (2, \(none), \(noInt), \(noInt64), \(noInt32), \(noInt16), \(noDouble),
                    \(noFloat), \(noBool), \(noUUID), \(noDate), \(noBytes), \(noData))
                """)
            _ = try await pool.query(
                "INSERT INTO samples (id, s, bytes, data, b) VALUES (3, \(""), \([UInt8]()), \(Data()), \(false))")

            let rows = try await pool.query("SELECT * FROM samples ORDER BY id")
            #expect(rows.count == 3)
            let full = rows.rows[0]
            #expect(try full.decode("s", as: String.self) == text)
            #expect(try full.decode("i", as: Int.self) == Int.max)
            #expect(try full.decode("i64", as: Int64.self) == Int64.min)
            #expect(try full.decode("i32", as: Int32.self) == Int32.min)
            #expect(try full.decode("i16", as: Int16.self) == Int16.max)
            #expect(try full.decode("d", as: Double.self) == -1.25e300)
            #expect(try full.decode("f", as: Float.self) == 3.25)
            #expect(try full.decode("b", as: Bool.self) == true)
            #expect(try full.decode("u", as: UUID.self) == uuid)
            let decodedInstant = try full.decode("t", as: Date.self)
            #expect(abs(decodedInstant.timeIntervalSince(instant)) < 0.000_001)
            #expect(try full.decode("bytes", as: [UInt8].self) == big)
            #expect(try full.decode("data", as: Data.self) == everyByte)
            #expect(try full.decode(12, as: [UInt8].self) == [UInt8](everyByte))
            #expect(try full.decode("s", as: String?.self) == text)

            let empty = rows.rows[1]
            #expect(try empty.decode("s", as: String?.self) == nil)
            #expect(try empty.decode("i", as: Int?.self) == nil)
            #expect(try empty.decode("i64", as: Int64?.self) == nil)
            #expect(try empty.decode("i32", as: Int32?.self) == nil)
            #expect(try empty.decode("i16", as: Int16?.self) == nil)
            #expect(try empty.decode("d", as: Double?.self) == nil)
            #expect(try empty.decode("f", as: Float?.self) == nil)
            #expect(try empty.decode("b", as: Bool?.self) == nil)
            #expect(try empty.decode("u", as: UUID?.self) == nil)
            #expect(try empty.decode("t", as: Date?.self) == nil)
            #expect(try empty.decode("bytes", as: [UInt8]?.self) == nil)
            #expect(try empty.decode("data", as: Data?.self) == nil)
            let nullError = #expect(throws: PostgresError.self) { try empty.decode("s", as: String.self) }
            #expect(nullError?.kind == .decoding)
            #expect(nullError?.description.contains("'s' is NULL") == true)

            let blank = rows.rows[2]
            #expect(try blank.decode("s", as: String?.self) == "")
            #expect(try blank.decode("bytes", as: [UInt8]?.self) == [])
            #expect(try blank.decode("data", as: Data?.self) == Data())
            #expect(try blank.decode("b", as: Bool.self) == false)

            // NULL columns really are SQL NULL, empty ones are not.
            let counts = try await pool.query(
                "SELECT count(*) FILTER (WHERE s IS NULL) AS nulls, count(*) FILTER (WHERE s = '') AS blanks FROM samples")
            #expect(try counts.first?.decode("nulls", as: Int.self) == 1)
            #expect(try counts.first?.decode("blanks", as: Int.self) == 1)
        }
    }

    @Test func decodesServerSideTypesIntoSwiftTypes() async throws {
        try await withTestDatabase { database in
            let row = try await database.pool.query(
                """
                SELECT 'varchar'::varchar AS v, 'pad'::char(5) AS c, '{"a": [1, 2]}'::jsonb AS j, '{"b":1}'::json AS js,
                       12345678901234::numeric AS n, -1.5::numeric AS nd, 7::int4 AS small, 7::int2 AS tiny,
                       '2024-02-29 12:34:56.789012+00'::timestamptz AS ts, '2024-02-29'::date AS day,
                       'infinity'::timestamptz AS forever, 2.5::float4 AS f4
                """
            ).first!
            #expect(try row.decode("v", as: String.self) == "varchar")
            #expect(try row.decode("c", as: String.self) == "pad  ")
            #expect(try row.decode("j", as: String.self) == #"{"a": [1, 2]}"#)
            #expect(try row.decode("js", as: String.self) == #"{"b":1}"#)
            #expect(try row.decode("n", as: Int.self) == 12_345_678_901_234)
            #expect(try row.decode("nd", as: Double.self) == -1.5)
            #expect(try row.decode("small", as: Int.self) == 7)
            #expect(try row.decode("tiny", as: Int32.self) == 7)
            #expect(try row.decode("f4", as: Double.self) == 2.5)
            let expected = Date(timeIntervalSince1970: 1_709_210_096.789012)
            #expect(abs(try row.decode("ts", as: Date.self).timeIntervalSince(expected)) < 0.000_001)
            #expect(try row.decode("day", as: Date.self) == Date(timeIntervalSince1970: 1_709_164_800))
            #expect(try row.decode("forever", as: Date.self) == .distantFuture)

            let mismatch = #expect(throws: PostgresError.self) { try row.decode("v", as: Int.self) }
            #expect(mismatch?.kind == .decoding)
            #expect(#expect(throws: PostgresError.self) { try row.decode("n", as: Int16.self) }?.kind == .decoding)
            #expect(#expect(throws: PostgresError.self) { try row.decode("missing", as: Int.self) }?.kind == .decoding)
            #expect(#expect(throws: PostgresError.self) { try row.decode(99, as: Int.self) }?.kind == .decoding)
        }
    }

    enum Role: String, PostgresCodable {
        case admin, auditor
    }

    @Test func roundTripsRawRepresentableEnums() async throws {
        try await withTestDatabase { database in
            let row = try await database.pool.query("SELECT \(Role.auditor) AS role, 'janitor'::text AS other").first!
            #expect(try row.decode("role", as: Role.self) == .auditor)
            #expect(throws: PostgresError.self) { try row.decode("other", as: Role.self) }
        }
    }
}
