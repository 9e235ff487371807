import FaceGateCore
import FaceGateSchema
import Foundation
import KafkaClient
import PostgresClient
import Synchronization

/// What every service process shares: its configuration, logger, metrics, readiness checks, a
/// PostgreSQL pool, the Kafka settings and topic names.
public final class ServiceRuntime: Sendable {
    public let configuration: CommonConfiguration
    public let logger: Logger
    public let metrics: MetricsRegistry
    public let readiness: Readiness
    public let database: PostgresPool
    public let kafka: KafkaConfiguration
    public let topics: Topics
    /// Signs what this service produces and checks what it consumes.
    public let messages: MessageAuthenticator
    /// Requests whose answer did not come in time (`side` requester), and jobs taken only after their
    /// deadline had passed (`side` worker), by topic.
    public let deadlineMisses: Counter
    /// What requests and jobs start without waiting for; every service runs it in its group.
    public let background = BackgroundWork()

    public init(configuration: CommonConfiguration) throws {
        self.configuration = configuration
        logger = Logger(label: configuration.serviceName, level: configuration.logLevel,
                        metadata: ["instance": configuration.instanceId])
        metrics = MetricsRegistry()
        readiness = Readiness()
        var databaseConfiguration = try PostgresConfiguration(url: configuration.databaseURL)
        databaseConfiguration.applicationName = configuration.serviceName
        databaseConfiguration.statementTimeoutMilliseconds = configuration.statementTimeoutMilliseconds
        database = PostgresPool(configuration: databaseConfiguration)
        var kafka = KafkaConfiguration(brokers: configuration.kafkaBrokers, clientId: "\(configuration.serviceName)-\(configuration.instanceId)")
        kafka.connection.setupTimeout = .seconds(5)
        kafka.consumer.fetchWait = .milliseconds(configuration.kafkaFetchWaitMilliseconds)
        // Topics are created only by `ensureTopics`, with their partition counts and retention: a broker that
        // auto-created one on first use (after restarting empty) would give it its own default partition count.
        kafka.connection.autoCreateTopics = false
        // A consumer notices a topic that came back (or changed) only at a metadata refresh: every 10 s instead of
        // librdkafka's 5 minutes, so a group rejoins within seconds once its topics exist again.
        kafka.connection.metadataRefresh = .seconds(10)
        if !configuration.kafkaIdempotence { kafka.producer.delivery = .inOrder }
        kafka.security = configuration.kafkaSecurity
        self.kafka = kafka
        topics = Topics(prefix: configuration.topicPrefix)
        messages = MessageAuthenticator(keys: configuration.serviceKeys, topics: topics, metrics: metrics)
        deadlineMisses = metrics.counter("facegate_deadline_misses_total",
                                         help: "Requests not answered before their deadline (side=requester) and jobs taken after it (side=worker), by topic")
        ProcessMetrics.register(in: metrics, service: configuration.serviceName, database: database)

        let database = self.database
        readiness.add("postgres") { await database.isHealthy() }
        let kafkaConfiguration = kafka
        let probeTopic = topics.faceJobs
        // A metadata lookup opens a broker connection: probes closer together than 5 s share one answer. A failed probe
        // is shared for 0.5 s only, so a service whose topics appeared a moment later is ready at once, not 5 s late.
        let lastKafkaProbe = Mutex<(at: ContinuousClock.Instant, ok: Bool)?>(nil)
        readiness.add("kafka") {
            if let last = lastKafkaProbe.withLock({ $0 }), ContinuousClock.now - last.at < (last.ok ? .seconds(5) : .milliseconds(500)) {
                return last.ok
            }
            let ok = (try? await KafkaAdmin.partitionCount(topic: probeTopic, configuration: kafkaConfiguration)) != nil
            lastKafkaProbe.withLock { $0 = (ContinuousClock.now, ok) }
            return ok
        }
    }

    /// A producer whose every record is signed with this service's key.
    public func makeProducer() throws -> KafkaProducer {
        let messages = messages
        return try KafkaProducer(configuration: kafka, interceptor: { messages.sign($0) })
    }

    /// The admin endpoints for this process.
    public func adminServer() -> AdminServer {
        AdminServer(host: configuration.adminHost, port: configuration.adminPort, readiness: readiness, metrics: metrics, logger: logger)
    }

    /// Creates the topics this deployment uses if they are missing (idempotent); returns those it created.
    @discardableResult
    public func ensureTopics() async throws -> [String] {
        try await KafkaAdmin.ensureTopics(topics.all.map { KafkaTopicSpec(name: $0.name, partitions: $0.partitions, config: $0.config) },
                                          configuration: kafka)
    }

    /// Applies the schema migrations (the CLI's `migrate`, and tests).
    @discardableResult
    public static func migrate(_ pool: PostgresPool) async throws -> [Int] {
        try await Migrator.migrate(pool: pool, migrations: Schema.steps.map { Migration(version: $0.version, name: $0.name, sql: $0.sql) })
    }
}
