import Foundation

/// Typed reads of environment variables. A missing or malformed variable is a `ConfigurationError`
/// naming it; `main` prints that one line and exits.
public struct Environment: Sendable {
    public var values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    public func string(_ name: String, default fallback: String) -> String {
        values[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback
    }

    public func optionalString(_ name: String) -> String? {
        values[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func required(_ name: String) throws(ConfigurationError) -> String {
        guard let value = optionalString(name) else { throw ConfigurationError(variable: name, problem: "is required but not set") }
        return value
    }

    public func int(_ name: String, default fallback: Int, range: ClosedRange<Int> = Int.min...Int.max) throws(ConfigurationError) -> Int {
        guard let text = optionalString(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(variable: name, problem: "must be a whole number in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return value
    }

    public func double(_ name: String, default fallback: Double) throws(ConfigurationError) -> Double {
        guard let text = optionalString(name) else { return fallback }
        guard let value = Double(text), value.isFinite else {
            throw ConfigurationError(variable: name, problem: "must be a number, got '\(text)'")
        }
        return value
    }

    /// Base64 of exactly `count` bytes (keys).
    /// `true`/`false` (also `1`/`0`, `yes`/`no`).
    public func bool(_ name: String, default fallback: Bool) throws(ConfigurationError) -> Bool {
        guard let text = optionalString(name)?.lowercased() else { return fallback }
        switch text {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw ConfigurationError(variable: name, problem: "must be true or false")
        }
    }

    /// `FACEGATE_PREVIOUS_SEALING_KEYS`: sealing keys rotated out, base64 of 32 bytes each, separated by commas.
    public func previousSealingKeys() throws(ConfigurationError) -> [[UInt8]] {
        let name = "FACEGATE_PREVIOUS_SEALING_KEYS"
        var keys: [[UInt8]] = []
        for text in (optionalString(name) ?? "").split(separator: ",") {
            guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)), data.count == 32 else {
                throw ConfigurationError(variable: name, problem: "must be base64 keys of exactly 32 bytes, separated by commas")
            }
            keys.append(Array(data))
        }
        return keys
    }

    public func base64Key(_ name: String, bytes count: Int) throws(ConfigurationError) -> [UInt8] {
        let text = try required(name)
        guard let data = Data(base64Encoded: text), data.count == count else {
            throw ConfigurationError(variable: name, problem: "must be base64 of exactly \(count) bytes")
        }
        return Array(data)
    }

    public func choice<T: RawRepresentable>(_ name: String, default fallback: T) throws(ConfigurationError) -> T where T.RawValue == String {
        guard let text = optionalString(name) else { return fallback }
        guard let value = T(rawValue: text) else { throw ConfigurationError(variable: name, problem: "has an unknown value '\(text)'") }
        return value
    }
}

public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var variable: String
    public var problem: String
    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }
    public var description: String { "configuration error: \(variable) \(problem)" }
}

/// What every FaceGate service reads from its environment.
public struct CommonConfiguration: Sendable {
    public var serviceName: String
    public var databaseURL: String
    public var kafkaBrokers: String
    public var adminHost: String
    public var adminPort: Int
    public var logLevel: LogLevel
    public var instanceId: String
    public var topicPrefix: String
    public var shutdownSeconds: Int
    /// Longest a single SQL statement may run (the matcher's gallery load is one long statement).
    public var statementTimeoutMilliseconds: Int
    /// Broker security, as librdkafka properties: TLS and SASL from named variables only, so no
    /// configuration can switch off what the clients rely on (idempotence, acks, isolation).
    public var kafkaSecurity: [String: String] = [:]
    /// How long the broker may hold a fetch that has no data (librdkafka `fetch.wait.max.ms`): Apache Kafka
    /// answers it as soon as data arrives, so a long wait costs no latency and saves the idle polling.
    public var kafkaFetchWaitMilliseconds: Int
    /// The same for a requester's reply partition (`FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS`, default: the fetch wait above).
    /// The partition is paused while idle, so a short wait costs fetches only while requests wait for replies.
    public var kafkaReplyFetchWaitMilliseconds: Int
    /// A requester that has waited for no reply this long stops fetching its reply partition until its next request
    /// (`FACEGATE_KAFKA_REPLY_PAUSE_MS`, default 2000; 0: always fetch), so an idle service costs the broker no fetches.
    public var kafkaReplyPauseMilliseconds: Int
    /// A job consumer that has had no job for this long stops fetching until the job doorbell (`JobDoorbell`, a
    /// PostgreSQL NOTIFY every requester sends) rings for one of its partitions (`FACEGATE_KAFKA_JOB_PAUSE_MS`, 0 or at
    /// least 2000; default 0: always fetch). For a broker that holds every empty fetch for its whole wait (the local stack
    /// sets 2000); it needs a PostgreSQL connection that can LISTEN (not a transaction-pooling PgBouncer).
    public var kafkaJobPauseMilliseconds: Int
    /// Idempotent producers (`FACEGATE_KAFKA_IDEMPOTENCE`, default on): no duplicate or reordered record when a
    /// send is retried. Off, records are produced one request at a time per partition, so retries still keep
    /// their order, and a rare duplicate is left to the consumers, which are idempotent anyway. The local broker
    /// forgets producer ids when it restarts, and its answer to librdkafka's recovery loops forever, so the
    /// local stack turns it off.
    public var kafkaIdempotence: Bool
    /// This service's message-signing key and every service's public key (see `MessageAuthenticator`).
    public var serviceKeys: ServiceKeys

    /// The variables `kafkaSecurity` reads, with the librdkafka property each sets.
    public static let kafkaSecurityVariables: [(variable: String, property: String)] = [
        ("FACEGATE_KAFKA_SECURITY_PROTOCOL", "security.protocol"),  // plaintext, ssl, sasl_plaintext, sasl_ssl
        ("FACEGATE_KAFKA_SASL_MECHANISM", "sasl.mechanisms"),       // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
        ("FACEGATE_KAFKA_SASL_USERNAME", "sasl.username"),
        ("FACEGATE_KAFKA_SASL_PASSWORD", "sasl.password"),
        ("FACEGATE_KAFKA_SSL_CA_LOCATION", "ssl.ca.location"),
        ("FACEGATE_KAFKA_SSL_CERTIFICATE_LOCATION", "ssl.certificate.location"),
        ("FACEGATE_KAFKA_SSL_KEY_LOCATION", "ssl.key.location"),
    ]

    public init(serviceName: String, defaultAdminPort: Int, defaultStatementTimeoutMilliseconds: Int = 10_000,
                environment env: Environment) throws(ConfigurationError) {
        self.serviceName = serviceName
        databaseURL = try env.required("FACEGATE_DATABASE_URL")
        kafkaBrokers = try env.required("FACEGATE_KAFKA_BROKERS")
        adminHost = env.string("FACEGATE_ADMIN_HOST", default: "127.0.0.1")
        adminPort = try env.int("FACEGATE_ADMIN_PORT", default: defaultAdminPort, range: 0...65535)
        logLevel = try env.choice("FACEGATE_LOG_LEVEL", default: .info)
        instanceId = env.string("FACEGATE_INSTANCE_ID", default: "\(ProcessInfo.processInfo.hostName)-\(getpid())")
        topicPrefix = env.string("FACEGATE_TOPIC_PREFIX", default: "")
        shutdownSeconds = try env.int("FACEGATE_SHUTDOWN_SECONDS", default: 20, range: 1...600)
        statementTimeoutMilliseconds = try env.int("FACEGATE_DATABASE_STATEMENT_TIMEOUT_MS", default: defaultStatementTimeoutMilliseconds,
                                                   range: 100...86_400_000)
        kafkaFetchWaitMilliseconds = try env.int("FACEGATE_KAFKA_FETCH_WAIT_MS", default: 500, range: 1...5000)
        kafkaReplyFetchWaitMilliseconds = try env.int("FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS", default: kafkaFetchWaitMilliseconds,
                                                      range: 1...5000)
        kafkaReplyPauseMilliseconds = try env.int("FACEGATE_KAFKA_REPLY_PAUSE_MS", default: 2000, range: 0...600_000)
        kafkaJobPauseMilliseconds = try env.int("FACEGATE_KAFKA_JOB_PAUSE_MS", default: 0, range: 0...600_000)
        if (1..<Int(JobDoorbell.shortestPause.milliseconds)).contains(kafkaJobPauseMilliseconds) {
            throw ConfigurationError(variable: "FACEGATE_KAFKA_JOB_PAUSE_MS", problem: "must be 0 or at least \(Int(JobDoorbell.shortestPause.milliseconds))")
        }
        kafkaIdempotence = try env.bool("FACEGATE_KAFKA_IDEMPOTENCE", default: true)
        guard let seed = Data(base64Encoded: try env.required("FACEGATE_SERVICE_KEY")) else {
            throw ConfigurationError(variable: "FACEGATE_SERVICE_KEY", problem: "must be base64 of a 32-byte Ed25519 seed")
        }
        serviceKeys = try ServiceKeys(service: serviceName, seed: Array(seed), publicKeys: try env.required("FACEGATE_SERVICE_PUBLIC_KEYS"))
        for (variable, property) in Self.kafkaSecurityVariables {
            if let value = env.optionalString(variable) { kafkaSecurity[property] = value }
        }
        if let scheme = kafkaSecurity["security.protocol"],
           !["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"].contains(scheme.lowercased()) {
            throw ConfigurationError(variable: "FACEGATE_KAFKA_SECURITY_PROTOCOL", problem: "must be plaintext, ssl, sasl_plaintext or sasl_ssl")
        }
    }
}
