/// A SQL statement whose interpolated values travel as `$n` parameters, never as SQL text.
///
///     let rows = try await pool.query("SELECT name FROM users WHERE app_id = \(appID) AND id = \(userID)")
///
/// Identifiers cannot be parameters; `\(unsafeRaw:)` pastes text into the SQL unchanged and must
/// only ever receive trusted, program-chosen strings.
public struct PostgresQuery: ExpressibleByStringInterpolation, Sendable, CustomStringConvertible {
    public var sql: String
    public var binds: PostgresBindings

    public init(stringLiteral value: String) {
        sql = value
        binds = PostgresBindings()
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
    }

    /// SQL with explicit `$1…$n` placeholders and their values, in order.
    public init(unsafeSQL: String, binds values: [any PostgresEncodable & Sendable] = []) {
        sql = unsafeSQL
        binds = PostgresBindings()
        for value in values { binds.append(value) }
    }

    /// The SQL text only: safe to log.
    public var description: String { sql }

    /// Appends `fragment`, its parameters numbered on after this query's: how a statement of several parts is built (a
    /// WITH of one data-modifying part per item).
    public mutating func append(_ fragment: PostgresQuery) {
        let shift = binds.count
        guard shift > 0 else {
            sql += fragment.sql
            binds = fragment.binds
            return
        }
        var text = fragment.sql[...]
        while let dollar = text.firstIndex(of: "$") {
            sql += text[..<dollar]
            let digits = text[text.index(after: dollar)...].prefix { $0.isASCII && $0.isNumber }
            sql += digits.isEmpty ? "$" : "$\(Int(digits)! + shift)"
            text = text[digits.endIndex...]
        }
        sql += text
        binds.append(contentsOf: fragment.binds)
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds = PostgresBindings()

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value)
            sql += "$\(binds.count)"
        }

        /// `nil` is sent as a typed NULL.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            if let value { binds.append(value) } else { binds.appendNull(Value.postgresType) }
            sql += "$\(binds.count)"
        }

        /// Pastes `unsafeRaw` into the SQL text unescaped: for identifiers and keywords the program chose, never user input.
        public mutating func appendInterpolation(unsafeRaw: String) { sql += unsafeRaw }
    }
}

/// Parameter values already encoded in binary format, packed into one buffer.
public struct PostgresBindings: Sendable {
    var types: [UInt32] = []
    var bytes: [UInt8] = []
    var offsets: [Int] = []
    /// Byte length of each value; -1 for NULL.
    var lengths: [Int32] = []
    /// Set when a value exceeds what the protocol can carry (libpq takes lengths as Int32).
    var hasOversizedValue = false

    public init() {}

    public var count: Int { types.count }

    public mutating func append<Value: PostgresEncodable>(_ value: Value) {
        let start = bytes.count
        value.encode(into: &bytes)
        types.append(Value.postgresType.oid)
        offsets.append(start)
        let length = bytes.count - start
        if length > Int(Int32.max) { hasOversizedValue = true }
        lengths.append(Int32(truncatingIfNeeded: length))
    }

    mutating func append(contentsOf other: PostgresBindings) {
        offsets += other.offsets.map { $0 + bytes.count }
        types += other.types
        bytes += other.bytes
        lengths += other.lengths
        hasOversizedValue = hasOversizedValue || other.hasOversizedValue
    }

    public mutating func appendNull(_ type: PostgresDataType) {
        types.append(type.oid)
        offsets.append(bytes.count)
        lengths.append(-1)
    }
}

/// Whatever runs a statement: the pool (a connection of its own per statement) or one connection inside a
/// transaction. Code that must work both alone and as part of a caller's transaction takes this.
public protocol PostgresQueryable: Sendable {
    func query(_ query: PostgresQuery, file: String, line: Int) async throws(PostgresError) -> PostgresRows
}

extension PostgresQueryable {
    public func query(_ query: PostgresQuery, file: String = #fileID, line: Int = #line) async throws(PostgresError) -> PostgresRows {
        try await self.query(query, file: file, line: line)
    }
}

extension PostgresPool: PostgresQueryable {}
extension PostgresConnection: PostgresQueryable {}
