import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit

public struct KioskConfiguration: Sendable {
    public var common: CommonConfiguration
    public var sessionTTLSeconds: Int

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "kiosk-orchestrator", defaultAdminPort: 9103, environment: env)
        sessionTTLSeconds = try env.int("FACEGATE_KIOSK_SESSION_TTL_SECONDS", default: 1800, range: 60...86400)
    }
}

/// The kiosk-orchestrator process: owns kiosk sessions. This process starts, reports readiness and
/// metrics, and stops cleanly.
public final class KioskOrchestrator: Sendable {
    public let runtime: ServiceRuntime
    public let group: ServiceGroup

    public init(configuration: KioskConfiguration) throws {
        runtime = try ServiceRuntime(configuration: configuration.common)
        let producer = try KafkaProducer(configuration: runtime.kafka)
        group = ServiceGroup(services: [runtime.adminServer(), TopicsService(runtime: runtime), ProducerService(producer: producer)],
                             logger: runtime.logger, shutdownTimeout: .seconds(configuration.common.shutdownSeconds))
    }
}
