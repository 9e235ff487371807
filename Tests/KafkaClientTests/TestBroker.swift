import Foundation
import KafkaClient
import Testing

/// The broker under test, from FACEGATE_TEST_KAFKA_BROKERS (set by the Makefile).
enum TestBroker {
    struct MissingBroker: Error, CustomStringConvertible {
        var description: String {
            "FACEGATE_TEST_KAFKA_BROKERS is not set: point it at a Kafka-protocol broker (e.g. 127.0.0.1:59092) "
                + "and run with LD_LIBRARY_PATH holding librdkafka ≥ 2.x"
        }
    }

    static func configuration(clientId: String = "facegate-test") throws -> KafkaConfiguration {
        guard let brokers = ProcessInfo.processInfo.environment["FACEGATE_TEST_KAFKA_BROKERS"], !brokers.isEmpty else {
            throw MissingBroker()
        }
        var configuration = KafkaConfiguration(brokers: brokers, clientId: clientId)
        // The shortest session a Kafka broker accepts by default; tansu delays each join by half of it.
        configuration.consumer.sessionTimeout = .seconds(6)
        configuration.logHandler = { event in
            if event.level <= 3 { print("librdkafka \(event.clientName) \(event.facility): \(event.message)") }
        }
        return configuration
    }

    /// A topic name no other test (or earlier run) uses.
    static func uniqueName(_ label: String) -> String {
        "test.\(label).\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Creates fresh topics and returns their names in order.
    static func makeTopics(_ label: String, partitions: [Int], configuration: KafkaConfiguration) async throws -> [String] {
        let names = partitions.indices.map { uniqueName("\(label)\($0)") }
        try await KafkaAdmin.ensureTopics(
            zip(names, partitions).map { KafkaTopicSpec(name: $0, partitions: $1) }, configuration: configuration)
        return names
    }

    /// Polls `consumer` on a dedicated thread until `count` messages arrived or `timeout` passed.
    static func collect(_ count: Int, from consumer: KafkaConsumer, timeout: Duration = .seconds(30)) async throws -> [KafkaMessage] {
        try await onThread {
            let deadline = ContinuousClock.now + timeout
            var messages: [KafkaMessage] = []
            while messages.count < count && ContinuousClock.now < deadline {
                if let message = try consumer.poll(timeoutMilliseconds: 100) { messages.append(message) }
            }
            return messages
        }
    }

    /// Runs blocking test code off the cooperative pool.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// Re-checks `condition` every 20 ms until it holds or `timeout` passes.
    static func eventually(timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}

extension Array where Element == UInt8 {
    var text: String { String(decoding: self, as: UTF8.self) }
}
