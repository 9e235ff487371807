import FaceGateCore
import FaceGateTestSupport
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

    /// What a scan read, and "topic: what" or "table: what" for each finding.
    struct Scan {
        var findings: [String] = []
        var messages = 0
        var rows = 0
    }

    static func scan(_ stack: TestStack, secrets: [String]) async throws -> Scan {
        let marks = photoMarks.map { ("a photo", Array($0.utf8)) } + secrets.map { ("'\($0)'", Array($0.utf8)) }
        func found(_ bytes: [UInt8]) -> [String] {
            marks.filter { bytes.firstRange(of: $0.1) != nil }.map(\.0)
        }
        var scan = Scan()
        for topic in Topics(prefix: stack.environment["FACEGATE_TOPIC_PREFIX"] ?? "").all.map(\.name) {
            for message in try await readAll(topic) {
                let headers = message.headers.flatMap(\.value)
                scan.findings += found(message.value + (message.key ?? []) + headers).map { "\(topic) offset \(message.offset): \($0)" }
                scan.messages += 1
            }
        }
        let tables = try await stack.database.pool.query(
            "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")
        for table in try tables.rows.map({ try $0.decode("name", as: String.self) }) {
            let rows = try await stack.database.pool.query(PostgresQuery(unsafeSQL: "SELECT t::text AS row FROM \(table) t"))
            for row in rows.rows {
                scan.findings += found(Array(try row.decode("row", as: String.self).utf8)).map { "\(table): \($0)" }
                scan.rows += 1
            }
        }
        return scan
    }

    /// Every message of every partition of `topic`, from the beginning to the end (high watermark) it had when read.
    static func readAll(_ topic: String) async throws -> [KafkaMessage] {
        let configuration = KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"), clientId: "privacy-scan")
        guard let partitions = try? await KafkaAdmin.partitionCount(topic: topic, configuration: configuration), partitions > 0 else { return [] }
        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        let all = (0..<partitions).map { KafkaTopicPartition(topic: topic, partition: Int32($0)) }
        var unread: [Int32: Int64] = [:]
        for partition in all {
            let (low, high) = try consumer.watermarkOffsets(for: partition)
            if high > low { unread[partition.partition] = high }
        }
        try consumer.assign(all.map { ($0, KafkaOffset.beginning) })
        var messages: [KafkaMessage] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while !unread.isEmpty {
            guard ContinuousClock.now < deadline else { throw TestSetupError("\(topic): not read to its end within 30 s") }
            guard let message = try consumer.poll(timeoutMilliseconds: 100) else { continue }
            messages.append(message)
            if let end = unread[message.partition], message.offset + 1 >= end { unread[message.partition] = nil }
        }
        return messages
    }
}
