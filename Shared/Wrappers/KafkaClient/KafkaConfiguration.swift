import Foundation

/// One log line from librdkafka.
public struct KafkaLogEvent: Sendable {
    /// syslog severity: 0 emergency … 3 error, 4 warning, 6 info, 7 debug.
    public var level: Int32
    /// librdkafka's facility, e.g. `FAIL`, `REQTMOUT`, `CGRPOP`.
    public var facility: String
    public var message: String
    /// librdkafka's instance name, e.g. `facegate#producer-1`.
    public var clientName: String

    public init(level: Int32, facility: String, message: String, clientName: String) {
        self.level = level
        self.facility = facility
        self.message = message
        self.clientName = clientName
    }
}

/// Connection settings shared by producers, consumers and admin calls. The tuning a service sets is typed (`connection`,
/// `consumer`, `producer`, each field documented with the librdkafka property it stands for); `security` and
/// `properties` carry librdkafka's own names for what has no field (TLS and SASL from the deployment, a one-off setting),
/// checked by librdkafka when a client is created.
public struct KafkaConfiguration: Sendable {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var brokers: String
    /// `client.id`, visible in broker logs.
    public var clientId: String
    public var connection = Connection()
    public var consumer = Consumer()
    public var producer = Producer()
    /// TLS and SASL (`security.protocol`, `ssl.*`, `sasl.*`), as the deployment names them.
    public var security: [String: String] = [:]
    /// Any other librdkafka property (CONFIGURATION.md names); it overrides the typed settings and the wrapper's defaults.
    public var properties: [String: String] = [:]
    /// Receives librdkafka's log lines (called on librdkafka's own threads). `nil` keeps librdkafka's
    /// default, which prints to stderr.
    public var logHandler: (@Sendable (KafkaLogEvent) -> Void)?

    public init(brokers: String, clientId: String = "facegate") {
        self.brokers = brokers
        self.clientId = clientId
    }

    /// Every client's link to the brokers. Nil: librdkafka's default.
    public struct Connection: Sendable {
        /// `socket.connection.setup.timeout.ms`: how long connecting to a broker may take (librdkafka: 30 s).
        public var setupTimeout: Duration?
        /// `topic.metadata.refresh.interval.ms`: how often topics and partitions are re-read (librdkafka: 5 min), which is
        /// how soon a consumer notices a topic that came back.
        public var metadataRefresh: Duration?
        /// `allow.auto.create.topics`: whether using a missing topic creates it with the broker's defaults.
        public var autoCreateTopics: Bool?

        public init() {}
    }

    /// Consumers. Nil: the wrapper's default (`KafkaConsumer.defaultProperties`), else librdkafka's.
    public struct Consumer: Sendable {
        /// `fetch.wait.max.ms`: how long the broker may hold a fetch while no message waits — the latency a message can
        /// wait to be seen, against the idle cost of fetching (the wrapper: 5 ms).
        public var fetchWait: Duration?
        /// `session.timeout.ms`: how long a silent group member keeps its partitions (the wrapper: 10 s).
        public var sessionTimeout: Duration?
        /// `heartbeat.interval.ms`: how often a member says it is alive (librdkafka: 3 s); well under the session timeout.
        public var heartbeatInterval: Duration?
        /// `max.poll.interval.ms`: the longest a member may go without polling before it is taken out of its group.
        public var maxPollInterval: Duration?
        /// `auto.commit.interval.ms`: how often stored offsets are committed (librdkafka: 5 s).
        public var autoCommitInterval: Duration?

        public init() {}
    }

    /// Producers. Nil: the wrapper's default (`KafkaProducer.defaultProperties`), else librdkafka's.
    public struct Producer: Sendable {
        /// How records reach the broker in order and once.
        public enum Delivery: Sendable {
            /// `enable.idempotence=true`: the broker drops retried duplicates (the wrapper's default).
            case idempotent
            /// For brokers without idempotent producers: `enable.idempotence=false`, `acks=all`,
            /// `max.in.flight.requests.per.connection=1` (in order, a retry may duplicate).
            case inOrder
        }
        public var delivery: Delivery?
        /// `message.timeout.ms`: how long a record may wait for the broker's acknowledgement before `send` fails.
        public var messageTimeout: Duration?

        public init() {}
    }

    /// The client kinds a property set is made for: each gets only its own settings.
    enum ClientKind { case producer, consumer, admin }

    /// The property set handed to librdkafka: wrapper defaults, connection settings, the typed settings of `kind`, security,
    /// then `properties`.
    func librdkafkaProperties(for kind: ClientKind, defaults: [String: String]) -> [String: String] {
        var all = defaults
        all["bootstrap.servers"] = brokers
        all["client.id"] = clientId
        func set(_ name: String, _ value: Duration?) {
            if let value { all[name] = String(value.components.seconds * 1000 + value.components.attoseconds / 1_000_000_000_000_000) }
        }
        set("socket.connection.setup.timeout.ms", connection.setupTimeout)
        set("topic.metadata.refresh.interval.ms", connection.metadataRefresh)
        if let create = connection.autoCreateTopics { all["allow.auto.create.topics"] = String(create) }
        switch kind {
        case .consumer:
            set("fetch.wait.max.ms", consumer.fetchWait)
            set("session.timeout.ms", consumer.sessionTimeout)
            set("heartbeat.interval.ms", consumer.heartbeatInterval)
            set("max.poll.interval.ms", consumer.maxPollInterval)
            set("auto.commit.interval.ms", consumer.autoCommitInterval)
        case .producer:
            switch producer.delivery {
            case .idempotent: all["enable.idempotence"] = "true"
            case .inOrder:
                all["enable.idempotence"] = "false"
                all["acks"] = "all"
                all["max.in.flight.requests.per.connection"] = "1"
            case nil: break
            }
            set("message.timeout.ms", producer.messageTimeout)
        case .admin:
            break
        }
        all.merge(security) { _, security in security }
        all.merge(properties) { _, override in override }
        return all
    }

    /// Reports a condition found by the wrapper itself (not by librdkafka's logger).
    func report(level: Int32, facility: String, message: String, clientName: String) {
        let event = KafkaLogEvent(level: level, facility: facility, message: message, clientName: clientName)
        if let logHandler {
            logHandler(event)
        } else {
            FileHandle.standardError.write(Data("kafka \(clientName) \(facility): \(message)\n".utf8))
        }
    }
}
