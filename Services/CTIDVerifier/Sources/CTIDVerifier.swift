import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit

public struct CTIDConfiguration: Sendable {
    public var common: CommonConfiguration
    public var sealingKey: [UInt8]
    public var privateKey: [UInt8]
    public var serialTTLSeconds: Int

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "ctid-verifier", defaultAdminPort: 9102, environment: env)
        sealingKey = try env.base64Key("FACEGATE_SEALING_KEY", bytes: 32)
        privateKey = try env.base64Key("FACEGATE_CTID_PRIVATE_KEY", bytes: 32)
        serialTTLSeconds = try env.int("FACEGATE_CTID_SERIAL_TTL_SECONDS", default: 600, range: 30...86400)
    }
}

/// The ctid-verifier process: holds the institution keys (sealed to its private key) and answers CTID
/// verification jobs. This process starts, reports readiness and metrics, and stops cleanly.
public final class CTIDVerifier: Sendable {
    public let runtime: ServiceRuntime
    public let group: ServiceGroup

    public init(configuration: CTIDConfiguration) throws {
        runtime = try ServiceRuntime(configuration: configuration.common)
        let producer = try KafkaProducer(configuration: runtime.kafka)
        group = ServiceGroup(services: [runtime.adminServer(), TopicsService(runtime: runtime), ProducerService(producer: producer)],
                             logger: runtime.logger, shutdownTimeout: .seconds(configuration.common.shutdownSeconds))
    }
}
