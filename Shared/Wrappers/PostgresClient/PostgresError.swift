/// An error from the PostgreSQL client: a server error carrying its SQLSTATE, a lost or refused
/// connection, a value that could not be decoded, or a misuse of the pool.
///
/// `description` is safe to log: it holds the SQLSTATE and the server's primary message, never bound
/// parameter values (the server puts those in `detail`). `debugDescription` adds the detail, hint,
/// constraint, the SQL text (without values) and where the error arose.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The server rejected a statement; `sqlState` says why.
        case server
        /// No connection could be made, or it broke while in use.
        case connection
        /// A configuration or URL that cannot work.
        case configuration
        /// A column value that cannot become the requested Swift type.
        case decoding
        /// A query that cannot be sent as built (too many parameters, unsupported statement kind).
        case invalidQuery
        /// The pool was closed.
        case poolClosed
        /// The waiting task was cancelled.
        case cancelled
    }

    public var kind: Kind
    /// Five-character SQLSTATE code, e.g. `23505`; nil for errors that did not come from the server.
    public var sqlState: String?
    public var message: String
    /// A retry of the same operation may succeed (serialization failure, deadlock, lost connection).
    public var isRetriable: Bool
    /// The connection to the server failed; the pool reconnects on next use.
    public var isConnectionFailure: Bool

    public var severity: String?
    public var detail: String?
    public var hint: String?
    public var schemaName: String?
    public var tableName: String?
    public var columnName: String?
    public var constraintName: String?
    /// Where inside the server the error was raised (`file:line function`).
    public var serverLocation: String?
    /// The SQL text that failed, without parameter values.
    public var query: String?
    /// The statement never reached the server (the connection failed before it was sent), so running it again cannot
    /// run it twice.
    var wasNotSent = false
    /// Call site in this program.
    public var file: String
    public var line: Int

    public init(
        kind: Kind, message: String, sqlState: String? = nil, isConnectionFailure: Bool = false,
        file: String = #fileID, line: Int = #line
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.isConnectionFailure = isConnectionFailure || kind == .connection
        self.isRetriable = self.isConnectionFailure || Self.retriableStates.contains(sqlState ?? "")
        self.file = file
        self.line = line
    }

    private static let retriableStates: Set<String> = [
        "40001",  // serialization_failure
        "40P01",  // deadlock_detected
        "57P01",  // admin_shutdown
        "57P02",  // crash_shutdown
        "57P03",  // cannot_connect_now
        "53300",  // too_many_connections
    ]

    /// The server is away or refuses work for now (down, restarting, shutting down, out of connections, the pool
    /// closed): what a service answers as "unavailable, try again" rather than as its own failure.
    public var isServerUnavailable: Bool {
        isConnectionFailure || kind == .poolClosed || ["57P01", "57P02", "57P03", "53300"].contains(sqlState ?? "")
    }

    public var isUniqueViolation: Bool { sqlState == "23505" }
    public var isForeignKeyViolation: Bool { sqlState == "23503" }
    public var isNotNullViolation: Bool { sqlState == "23502" }
    public var isCheckViolation: Bool { sqlState == "23514" }
    public var isSerializationFailure: Bool { sqlState == "40001" }
    public var isDeadlock: Bool { sqlState == "40P01" }
    /// `statement_timeout` expired or the statement was cancelled (57014).
    public var isQueryCanceled: Bool { sqlState == "57014" }
    public var isUndefinedTable: Bool { sqlState == "42P01" }

    public var description: String {
        var text = "PostgreSQL \(kind.rawValue) error"
        if let sqlState { text += " \(sqlState)" }
        return text + ": " + message
    }

    public var debugDescription: String {
        var parts = [description]
        if let severity { parts.append("severity: \(severity)") }
        if let detail { parts.append("detail: \(detail)") }
        if let hint { parts.append("hint: \(hint)") }
        let object = [schemaName, tableName, columnName].compactMap { $0 }.joined(separator: ".")
        if !object.isEmpty { parts.append("object: \(object)") }
        if let constraintName { parts.append("constraint: \(constraintName)") }
        if let query { parts.append("query: \(query)") }
        if let serverLocation { parts.append("server location: \(serverLocation)") }
        parts.append("at: \(file):\(line)")
        return parts.joined(separator: "; ")
    }

    /// The same error re-attributed to the caller's source location.
    func located(file: String, line: Int) -> PostgresError {
        var copy = self
        copy.file = file
        copy.line = line
        return copy
    }
}
