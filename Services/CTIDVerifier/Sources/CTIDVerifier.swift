import AuditRecords
import CTIDRecords
import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit

public struct CTIDConfiguration: Sendable {
    public var common: CommonConfiguration
    public var sealingKey: [UInt8]
    public var previousSealingKeys: [[UInt8]]
    /// The key the registry's number hashes derive from: `FACEGATE_CTID_NUMBER_KEY`, else the sealing key. Pin it to
    /// the old sealing key before rotating that one, or the registered numbers are no longer found.
    public var numberKey: [UInt8]
    public var privateKey: [UInt8]
    public var serialTTLSeconds: Int
    /// How long a portrait check may wait for a matcher.
    public var faceJobTimeout: Duration
    public var concurrency: Int
    public var auditKeys: AuditKeys

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "ctid-verifier", defaultAdminPort: 9102, environment: env)
        auditKeys = try AuditKeys(environment: env)
        sealingKey = try env.base64Key("FACEGATE_SEALING_KEY", bytes: 32)
        previousSealingKeys = try env.previousSealingKeys()
        numberKey = env.optionalString("FACEGATE_CTID_NUMBER_KEY") == nil ? sealingKey : try env.base64Key("FACEGATE_CTID_NUMBER_KEY", bytes: 32)
        privateKey = try env.base64Key("FACEGATE_CTID_PRIVATE_KEY", bytes: 32)
        serialTTLSeconds = try env.int("FACEGATE_CTID_SERIAL_TTL_SECONDS", default: 600, range: 30...86400)
        faceJobTimeout = .seconds(try env.int("FACEGATE_REQUEST_TIMEOUT_SECONDS", default: 10, range: 1...120))
        concurrency = try env.int("CTID_CONCURRENCY", default: 8, range: 1...256)
    }
}

/// The ctid-verifier process: holds the institution keys (sealed to its private key) and answers CTID
/// jobs from `ctid.jobs.v1` (group `ctid-verifier`), asking matchers for portrait checks through its
/// own reply partition of `replies.ctid-verifier.v1`.
public final class CTIDVerifier: Sendable {
    public let runtime: ServiceRuntime
    public let group: ServiceGroup
    public let jobs: JobConsumer

    public init(configuration: CTIDConfiguration, registry: (any IdentityRegistry)? = nil) throws {
        runtime = try ServiceRuntime(configuration: configuration.common)
        let producer = try runtime.makeProducer()
        let faces = RequesterService(runtime: runtime, producer: producer, service: "ctid-verifier", timeout: configuration.faceJobTimeout)
        let registry = try registry ?? PostgresIdentityRegistry(
            database: runtime.database, sealer: try Sealer(key: configuration.sealingKey, previous: configuration.previousSealingKeys),
            numberKey: configuration.numberKey)
        let handler = CTIDJobHandler(runtime: runtime, producer: producer, registry: registry, faces: faces, privateKey: configuration.privateKey,
                                     auditKeys: configuration.auditKeys)
        jobs = try JobConsumer(name: "ctid-jobs", runtime: runtime, topic: runtime.topics.ctidJobs,
                               // Prefixed like the topics, so deployments sharing a broker never share the group.
                               groupId: runtime.topics.prefix + "ctid-verifier",
                               producer: producer, concurrency: configuration.concurrency) { [responder = handler.responder(runtime, producer: producer)] message in await responder.handle(message) }
        runtime.readiness.add("kafka-replies") { faces.isReady }
        group = ServiceGroup(services: [runtime.adminServer(), TopicsService(runtime: runtime, waitForTopics: true), ProducerService(producer: producer),
                                        runtime.background, faces, jobs],
                             logger: runtime.logger, shutdownTimeout: .seconds(configuration.common.shutdownSeconds))
    }
}
