import FaceGateCore
import Foundation
import KafkaClient
import PostgresClient
import Testing

/// Reads everything a stack left behind — every message of every topic (dead letters included) and every row of
/// every table — and reports where any of `secrets` or any photo appears. The README's personal-data table is what
/// this holds the stack to: no photo anywhere (job messages are sealed, images are never stored), and what was erased
/// is gone.
enum PrivacyScan {
    /// How a JPEG or PNG shows: in base64 (a JSON body) or as a bytea value's start in a row's text. (Raw magic bytes
    /// are not looked for: ciphertext holds any three bytes by chance.)
    static let photoMarks = ["/9j/4", "iVBORw0KGgo", "\\xffd8ff", "\\x89504e47"]

    /// "topic: what" or "table: what" for each finding.
    static func findings(in stack: TestStack, secrets: [String]) async throws -> [String] {
        let marks = photoMarks.map { ("a photo", Array($0.utf8)) } + secrets.map { ("'\($0)'", Array($0.utf8)) }
        func found(_ bytes: [UInt8]) -> [String] {
            marks.filter { bytes.firstRange(of: $0.1) != nil }.map(\.0)
        }
        var findings: [String] = []
        for topic in Topics(prefix: stack.environment["FACEGATE_TOPIC_PREFIX"] ?? "").all.map(\.name) {
            for message in try await readAll(topic) {
                let headers = message.headers.flatMap(\.value)
                findings += found(message.value + (message.key ?? []) + headers).map { "\(topic) offset \(message.offset): \($0)" }
            }
        }
        let tables = try await stack.database.pool.query(
            "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")
        for table in try tables.rows.map({ try $0.decode("name", as: String.self) }) {
            let rows = try await stack.database.pool.query(PostgresQuery(unsafeSQL: "SELECT t::text AS row FROM \(table) t"))
            for row in rows.rows {
                findings += found(Array(try row.decode("row", as: String.self).utf8)).map { "\(table): \($0)" }
            }
        }
        return findings
    }

    /// Every message of every partition of `topic`, from the beginning to the end it had when read.
    static func readAll(_ topic: String) async throws -> [KafkaMessage] {
        let configuration = KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"), clientId: "privacy-scan")
        guard let partitions = try? await KafkaAdmin.partitionCount(topic: topic, configuration: configuration), partitions > 0 else { return [] }
        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        try consumer.assign((0..<partitions).map { (KafkaTopicPartition(topic: topic, partition: Int32($0)), KafkaOffset.beginning) })
        var messages: [KafkaMessage] = []
        var quietSince = ContinuousClock.now
        while ContinuousClock.now - quietSince < .milliseconds(500) {
            if let message = try consumer.poll(timeoutMilliseconds: 100) {
                messages.append(message)
                quietSince = .now
            }
        }
        return messages
    }
}
