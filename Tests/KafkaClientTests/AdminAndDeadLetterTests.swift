import Foundation
import KafkaClient
import Testing

@Suite struct AdminTests {
    @Test func ensureTopicsCreatesMissingTopicsAndToleratesExistingOnes() async throws {
        let configuration = try TestBroker.configuration()
        let compacted = TestBroker.uniqueName("compacted")
        let plain = TestBroker.uniqueName("plain")
        let specs = [
            KafkaTopicSpec(name: compacted, partitions: 3, config: ["cleanup.policy": "compact"]),
            KafkaTopicSpec(name: plain, partitions: 2),
        ]
        await #expect(throws: KafkaError.self) { _ = try await KafkaAdmin.partitionCount(topic: plain, configuration: configuration) }

        try await KafkaAdmin.ensureTopics(specs, configuration: configuration)
        try await KafkaAdmin.ensureTopics(specs, configuration: configuration)

        #expect(try await KafkaAdmin.partitionCount(topic: compacted, configuration: configuration) == 3)
        #expect(try await KafkaAdmin.partitionCount(topic: plain, configuration: configuration) == 2)
    }

    @Test func aBadPropertyIsReportedByName() throws {
        var configuration = try TestBroker.configuration()
        configuration.properties["no.such.property"] = "1"
        let error = #expect(throws: KafkaError.self) { _ = try KafkaProducer(configuration: configuration) }
        #expect(error?.message.contains("no.such.property") == true)
        #expect(error?.isRetriable == false)
    }
}

@Suite struct DeadLetterTests {
    @Test func deadLetterRecordSaysWhereItCameFromButDropsThePayload() {
        let original = KafkaMessage(
            topic: "face.jobs.v1", partition: 5, offset: 1234, key: "job-77".bytes, value: [1, 2, 3],
            headers: [KafkaHeader(key: "traceparent", value: "00-t-s-01")], timestamp: Date())
        let record = deadLetterRecord(for: original, error: "decode failed: missing field payload", attempts: 3, valueDigest: "sha256:abc")

        #expect(record.topic == "face.jobs.v1.dlq")
        #expect(record.partition == nil)
        #expect(record.key == "job-77".bytes)
        #expect(record.value.isEmpty, "job values carry images: a dead letter keeps none")
        let headers = Dictionary(record.headers.map { ($0.key, $0.value.text) }, uniquingKeysWith: { first, _ in first })
        #expect(headers[DeadLetterHeader.originalTopic] == "face.jobs.v1")
        #expect(headers[DeadLetterHeader.originalPartition] == "5")
        #expect(headers[DeadLetterHeader.originalOffset] == "1234")
        #expect(headers[DeadLetterHeader.error] == "decode failed: missing field payload")
        #expect(headers[DeadLetterHeader.attempts] == "3")
        #expect(headers[DeadLetterHeader.valueBytes] == "3")
        #expect(headers[DeadLetterHeader.valueDigest] == "sha256:abc")
        #expect(headers["traceparent"] == "00-t-s-01")
        #expect(DeadLetterHeader.originalTopic == "dlq.original.topic")
        #expect(DeadLetterHeader.attempts == "dlq.attempts")
    }

    @Test(.timeLimit(.minutes(1)))
    func aDeadLetterRoundTripsThroughTheBroker() async throws {
        let configuration = try TestBroker.configuration()
        let topic = TestBroker.uniqueName("jobs")
        try await KafkaAdmin.ensureTopics(
            [KafkaTopicSpec(name: topic, partitions: 1), KafkaTopicSpec(name: topic + ".dlq", partitions: 1)],
            configuration: configuration)
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        _ = try await producer.send(KafkaRecord(topic: topic, key: "k".bytes, value: "poison".bytes))
        try consumer.assign([(KafkaTopicPartition(topic: topic, partition: 0), .beginning)])
        let failed = try #require(try await TestBroker.collect(1, from: consumer).first)

        _ = try await producer.send(deadLetterRecord(for: failed, error: "boom", attempts: 3, valueDigest: "sha256:0"))
        try consumer.assign([(KafkaTopicPartition(topic: topic + ".dlq", partition: 0), .beginning)])
        let parked = try #require(try await TestBroker.collect(1, from: consumer).first)
        #expect(parked.value.isEmpty)
        #expect(parked.header(DeadLetterHeader.valueBytes)?.text == "6")
        #expect(parked.key == "k".bytes)
        #expect(parked.header(DeadLetterHeader.originalOffset)?.text == String(failed.offset))
        #expect(parked.header(DeadLetterHeader.error)?.text == "boom")
    }
}
