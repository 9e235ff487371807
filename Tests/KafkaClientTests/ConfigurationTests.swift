import Foundation
@testable import KafkaClient
import Testing

/// The typed settings as librdkafka gets them: each under its property name, in milliseconds, for the client kind it
/// concerns only; the deployment's security and the escape hatch override them.
@Suite struct ConfigurationTests {
    @Test func typedSettingsBecomeTheirLibrdkafkaPropertiesForTheirKindOnly() {
        var configuration = KafkaConfiguration(brokers: "b1:9092,b2:9092", clientId: "matcher-7")
        configuration.connection.setupTimeout = .seconds(5)
        configuration.connection.metadataRefresh = .milliseconds(10_500)
        configuration.connection.autoCreateTopics = false
        configuration.consumer.fetchWait = .milliseconds(25)
        configuration.consumer.sessionTimeout = .seconds(10)
        configuration.consumer.heartbeatInterval = .seconds(1)
        configuration.consumer.maxPollInterval = .seconds(300)
        configuration.producer.delivery = .inOrder
        configuration.producer.messageTimeout = .milliseconds(1500)
        configuration.security = ["security.protocol": "SASL_SSL"]

        let shared = ["bootstrap.servers": "b1:9092,b2:9092", "client.id": "matcher-7", "socket.connection.setup.timeout.ms": "5000",
                      "topic.metadata.refresh.interval.ms": "10500", "allow.auto.create.topics": "false", "security.protocol": "SASL_SSL"]
        #expect(configuration.librdkafkaProperties(for: .consumer, defaults: [:]) == shared.merging([
            "fetch.wait.max.ms": "25", "session.timeout.ms": "10000", "heartbeat.interval.ms": "1000", "max.poll.interval.ms": "300000",
        ]) { $1 })
        #expect(configuration.librdkafkaProperties(for: .producer, defaults: ["linger.ms": "0", "enable.idempotence": "true"]) == shared.merging([
            "linger.ms": "0", "enable.idempotence": "false", "acks": "all", "max.in.flight.requests.per.connection": "1", "message.timeout.ms": "1500",
        ]) { $1 })
        #expect(configuration.librdkafkaProperties(for: .admin, defaults: [:]) == shared)

        // Unset fields leave the wrapper's defaults; `properties` has the last word.
        var plain = KafkaConfiguration(brokers: "b:9092")
        #expect(plain.librdkafkaProperties(for: .consumer, defaults: KafkaConsumer.defaultProperties)["fetch.wait.max.ms"] == "5")
        plain.consumer.fetchWait = .milliseconds(500)
        plain.properties["fetch.wait.max.ms"] = "7"
        #expect(plain.librdkafkaProperties(for: .consumer, defaults: KafkaConsumer.defaultProperties)["fetch.wait.max.ms"] == "7")
    }
}
