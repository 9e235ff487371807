import AuditRecords
import FaceGateCore
import Foundation
import JWT
import KafkaClient
import ServiceKit

public struct KioskConfiguration: Sendable {
    public var common: CommonConfiguration
    public var sessionTTLSeconds: Int
    public var auditKeys: AuditKeys
    public var sealingKey: [UInt8]
    public var previousSealingKeys: [[UInt8]]
    /// Identity tokens for approved or recognised customers are signed with the gateway's key.
    public var signingKey: [UInt8]
    public var issuer: String
    public var identityTokenTTL: TimeInterval
    public var faceJobTimeout: Duration
    public var matcherShards: Int
    public var concurrency: Int
    /// Failed attempts allowed per step before the session fails with `TOO_MANY_ATTEMPTS`.
    public var maxAttempts: Int
    public var tessdataPath: String?
    public var ocrEngines: Int
    public var sweepInterval: Duration
    /// How long a finished session (its document data, steps and events) is kept before it is erased.
    public var retentionSeconds: Int
    /// How long past its deadline a command is still carried out (`KIOSK_COMMAND_GRACE_SECONDS`); older ones are refused.
    public var commandGraceSeconds: Int

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "kiosk-orchestrator", defaultAdminPort: 9103, environment: env)
        auditKeys = try AuditKeys(environment: env)
        sessionTTLSeconds = try env.int("FACEGATE_KIOSK_SESSION_TTL_SECONDS", default: 1800, range: 60...86400)
        sealingKey = try env.base64Key("FACEGATE_SEALING_KEY", bytes: 32)
        previousSealingKeys = try env.previousSealingKeys()
        signingKey = try env.base64Key("FACEGATE_KIOSK_SIGNING_KEY", bytes: 32)
        issuer = env.string("FACEGATE_ISSUER", default: "facegate")
        identityTokenTTL = TimeInterval(try env.int("FACEGATE_IDENTITY_TOKEN_TTL_SECONDS", default: 300, range: 10...3600))
        faceJobTimeout = .seconds(try env.int("FACEGATE_REQUEST_TIMEOUT_SECONDS", default: 10, range: 1...120))
        matcherShards = try env.int("FACEGATE_MATCHER_SHARDS", default: 1, range: 1...1024)
        concurrency = try env.int("KIOSK_CONCURRENCY", default: 4, range: 1...256)
        maxAttempts = try env.int("KIOSK_MAX_ATTEMPTS", default: 5, range: 1...100)
        tessdataPath = env.optionalString("FACEGATE_TESSDATA_PREFIX")
        ocrEngines = try env.int("KIOSK_OCR_ENGINES", default: 1, range: 1...64)
        sweepInterval = .seconds(try env.int("KIOSK_SWEEP_SECONDS", default: 30, range: 1...3600))
        retentionSeconds = try env.int("FACEGATE_KIOSK_RETENTION_SECONDS", default: 86400, range: 1...(366 * 86400))
        commandGraceSeconds = try env.int("KIOSK_COMMAND_GRACE_SECONDS", default: 60, range: 0...3600)
    }
}

/// The kiosk-orchestrator process: owns kiosk sessions. Commands arrive on `kiosk.commands.v1` (group
/// `kiosk-orchestrator`, keyed by session so a session's commands stay in order); each step's effects
/// and events are committed to PostgreSQL before the command's offset moves, so a crash re-runs the
/// command from the session's persisted state. Face work goes to the matchers through its own reply
/// partition of `replies.kiosk-orchestrator.v1`.
public final class KioskOrchestrator: Sendable {
    public let runtime: ServiceRuntime
    public let group: ServiceGroup
    public let commands: JobConsumer

    public init(configuration: KioskConfiguration, documents: (any DocumentReader)? = nil) throws {
        runtime = try ServiceRuntime(configuration: configuration.common)
        let producer = try runtime.makeProducer()
        let faces = RequesterService(runtime: runtime, producer: producer, service: "kiosk-orchestrator", timeout: configuration.faceJobTimeout)
        let documents = try documents ?? MRZDocumentReader(tessdataPath: configuration.tessdataPath, engines: configuration.ocrEngines)
        let flow = try KioskFlow(configuration: configuration, runtime: runtime, producer: producer, faces: faces, documents: documents)
        commands = try JobConsumer(name: "kiosk-commands", runtime: runtime, topic: runtime.topics.kioskCommands,
                                   groupId: runtime.topics.prefix + "kiosk-orchestrator",
                                   producer: producer, concurrency: configuration.concurrency) { [responder = flow.responder(runtime, producer: producer)] message in await responder.handle(message) }
        runtime.readiness.add("kafka-replies") { faces.isReady }
        let sweeper = PeriodicService(name: "kiosk-expiry", every: configuration.sweepInterval, logger: runtime.logger) {
            _ = try await flow.expireSessions()
            _ = try await flow.eraseFinishedSessions(olderThan: configuration.retentionSeconds)
        }
        group = ServiceGroup(services: [runtime.adminServer(), TopicsService(runtime: runtime, waitForTopics: true), ProducerService(producer: producer),
                                        runtime.background, faces, commands, sweeper],
                             logger: runtime.logger, shutdownTimeout: .seconds(configuration.common.shutdownSeconds))
    }
}
