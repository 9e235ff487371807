import Foundation

/// How the connection negotiates TLS; the names and meanings are libpq's `sslmode`.
public enum PostgresTLSMode: String, Sendable, CaseIterable {
    case disable, allow, prefer, require
    case verifyCA = "verify-ca"
    case verifyFull = "verify-full"
}

/// Where and how to connect, plus the pool's limits.
public struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// Host name, IP address, or a directory holding the server's Unix socket.
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var tlsMode: PostgresTLSMode = .prefer
    /// Most connections the pool opens at once.
    public var poolSize: Int = 8
    /// libpq treats values below 2 as 2.
    public var connectTimeoutSeconds: Int = 5
    /// Sent as `statement_timeout` when each connection starts; 0 disables it.
    public var statementTimeoutMilliseconds: Int = 10_000
    public var applicationName: String = "facegate"
    /// TCP keepalive: a connection silent for this many seconds probes the server (then every 10 s, three times), so a
    /// server that vanished without closing (a lost host, a dropped NAT mapping) is noticed in about a minute instead
    /// of after the system's two hours (Linux's default idle time); 0 leaves the timing to the system.
    public var keepaliveIdleSeconds: Int = 30
    /// How long sent data (or keepalive probes) may go unacknowledged before the connection is given up
    /// (`TCP_USER_TIMEOUT`); 0 leaves it to the system, which retransmits for about 15 minutes.
    public var tcpUserTimeoutMilliseconds: Int = 30_000
    /// Further run-time parameters set when each connection starts (`-c name=value`), for the whole session.
    /// Names and values may not hold spaces or backslashes.
    public var sessionSettings: [String: String] = [:]

    public init(host: String, port: Int = 5432, user: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=require`.
    ///
    /// User, password and database may be percent-encoded. Query parameters: `sslmode`,
    /// `application_name`, `connect_timeout` (seconds), `statement_timeout` (milliseconds),
    /// `keepalives_idle` (seconds), `tcp_user_timeout` (milliseconds), `pool_size`, and `host` (for a Unix socket
    /// directory). Errors name the part that is wrong
    /// and never repeat the password.
    public init(url: String) throws(PostgresError) {
        func invalid(_ what: String) -> PostgresError {
            PostgresError(kind: .configuration, message: "invalid PostgreSQL URL: \(what)")
        }
        guard let schemeEnd = url.range(of: "://") else {
            throw invalid("missing scheme, expected postgres://user@host/database")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw invalid("scheme '\(scheme)' is not postgres or postgresql")
        }
        var rest = Substring(url[schemeEnd.upperBound...])
        var queryText: Substring = ""
        if let question = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        }

        var userInfo: Substring?
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
        }

        func decoded(_ text: Substring, _ part: String) throws(PostgresError) -> String {
            guard let value = String(text).removingPercentEncoding else {
                throw invalid("\(part) has a malformed percent-escape")
            }
            return value
        }

        var user = ""
        var password: String?
        if let userInfo {
            if let colon = userInfo.firstIndex(of: ":") {
                user = try decoded(userInfo[..<colon], "user name")
                password = try decoded(userInfo[userInfo.index(after: colon)...], "password")
            } else {
                user = try decoded(userInfo, "user name")
            }
        }

        var host = ""
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("IPv6 host is missing ']'") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after IPv6 host") }
                portText = after.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = try decoded(hostPort[..<colon], "host")
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = try decoded(hostPort, "host")
        }
        var port = 5432
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("port '\(portText)' is not a number from 1 to 65535")
            }
            port = value
        }

        let database = try decoded(path, "database name")
        if database.contains("/") { throw invalid("database name contains '/'") }

        var configuration = PostgresConfiguration(
            host: host, port: port, user: user, password: password, database: database)
        for pair in queryText.split(separator: "&") where !pair.isEmpty {
            let key: String
            let value: String
            if let equals = pair.firstIndex(of: "=") {
                key = try decoded(pair[..<equals], "query parameter name")
                value = try decoded(pair[pair.index(after: equals)...], "value of \(key)")
            } else {
                throw invalid("query parameter '\(pair)' has no value")
            }
            func number(_ range: ClosedRange<Int>) throws(PostgresError) -> Int {
                guard let number = Int(value), range.contains(number) else {
                    throw invalid("\(key) '\(value)' is not a number from \(range.lowerBound) to \(range.upperBound)")
                }
                return number
            }
            switch key {
            case "sslmode":
                guard let mode = PostgresTLSMode(rawValue: value) else {
                    let allowed = PostgresTLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw invalid("sslmode '\(value)' is not one of \(allowed)")
                }
                configuration.tlsMode = mode
            case "application_name": configuration.applicationName = value
            case "connect_timeout": configuration.connectTimeoutSeconds = try number(0...3600)
            case "statement_timeout": configuration.statementTimeoutMilliseconds = try number(0...Int(Int32.max))
            case "keepalives_idle": configuration.keepaliveIdleSeconds = try number(0...86_400)
            case "tcp_user_timeout": configuration.tcpUserTimeoutMilliseconds = try number(0...Int(Int32.max))
            case "pool_size": configuration.poolSize = try number(1...10_000)
            case "host": configuration.host = value
            default: throw invalid("unknown query parameter '\(key)'")
            }
        }
        if configuration.host.isEmpty { throw invalid("missing host") }
        if configuration.user.isEmpty { throw invalid("missing user name") }
        if configuration.database.isEmpty { throw invalid("missing database name (the path after the host)") }
        self = configuration
    }

    /// The URL without the password, for logs.
    public var description: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)@\(hostPart):\(port)/\(database)"
    }

    /// The libpq connection keywords; statement_timeout travels in the startup packet so it costs no round trip.
    var connectionParameters: [(String, String)] {
        var parameters: [(String, String)] = [
            ("host", host), ("port", String(port)), ("user", user), ("dbname", database),
            ("connect_timeout", String(connectTimeoutSeconds)), ("application_name", applicationName),
            ("sslmode", tlsMode.rawValue), ("client_encoding", "UTF8"),
            ("options", (["statement_timeout": String(statementTimeoutMilliseconds)].merging(sessionSettings) { $1 })
                .sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }.joined(separator: " ")),
        ]
        if keepaliveIdleSeconds > 0 {  // libpq turns keepalive on anyway; these set its timing
            parameters += [("keepalives_idle", String(keepaliveIdleSeconds)), ("keepalives_interval", "10"), ("keepalives_count", "3")]
        }
        if tcpUserTimeoutMilliseconds > 0 { parameters.append(("tcp_user_timeout", String(tcpUserTimeoutMilliseconds))) }
        if let password { parameters.append(("password", password)) }
        return parameters
    }
}
