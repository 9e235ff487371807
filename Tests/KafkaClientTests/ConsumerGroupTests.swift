import Foundation
@testable import KafkaClient
import Testing

@Suite struct ConsumerGroupTests {
    /// Sends one record per partition and returns them in partition order.
    private func sendOnePerPartition(
        _ producer: KafkaProducer, topic: String, partitions: Int32, label: String
    ) async throws {
        for partition in 0..<partitions {
            _ = try await producer.send(
                KafkaRecord(topic: topic, partition: partition, key: "\(label)-\(partition)".bytes, value: label.bytes))
        }
    }

    /// Lag is what the group has not committed yet: everything at first, less once offsets are committed.
    @Test(.timeLimit(.minutes(2)))
    func lagCountsWhatTheGroupHasNotCommitted() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("lag", partitions: [1], configuration: configuration)[0]
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        for index in 0..<5 { _ = try await producer.send(KafkaRecord(topic: topic, partition: 0, key: nil, value: "m\(index)".bytes)) }
        let consumer = try KafkaConsumer(configuration: configuration, groupId: TestBroker.uniqueName("lag"))
        defer { consumer.close() }
        try consumer.subscribe([topic])
        try await consumer.waitForAssignment(timeout: .seconds(60))
        #expect(try await consumer.lag().map(\.messages) == [5])
        let read = try await TestBroker.collect(2, from: consumer)
        try consumer.storeOffset(read[1])
        try consumer.commit()
        #expect(try await consumer.lag().map(\.messages) == [3])
    }

    @Test(.timeLimit(.minutes(2)))
    func membersSplitPartitionsAndUnstoredMessagesMoveToTheSurvivor() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("group", partitions: [4], configuration: configuration)[0]
        let group = TestBroker.uniqueName("group")
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }

        let first = try KafkaConsumer(configuration: configuration, groupId: group)
        let second = try KafkaConsumer(configuration: configuration, groupId: group)
        defer { second.close() }
        try first.subscribe([topic])
        try second.subscribe([topic])
        // Both members poll (waitForAssignment does while nobody else does) until the group settles.
        let settled = await TestBroker.eventually(timeout: .seconds(60)) {
            try? await first.waitForAssignment(timeout: .milliseconds(50))
            try? await second.waitForAssignment(timeout: .milliseconds(50))
            let a = Set(first.assignment), b = Set(second.assignment)
            return !a.isEmpty && !b.isEmpty && a.isDisjoint(with: b) && a.union(b).count == 4
        }
        try #require(settled, "assignments: \(first.assignment) / \(second.assignment)")
        #expect(Set(first.assignment.map(\.topic)) == [topic])

        // The first member reads two records of a partition it owns, stores only the first, then leaves.
        let owned = try #require(first.assignment.first)
        _ = try await producer.send(KafkaRecord(topic: topic, partition: owned.partition, key: "done".bytes, value: "a".bytes))
        _ = try await producer.send(KafkaRecord(topic: topic, partition: owned.partition, key: "unfinished".bytes, value: "b".bytes))
        let read = try await TestBroker.collect(2, from: first)
        try #require(read.map(\.keyString) == ["done", "unfinished"])
        try first.storeOffset(read[0])
        first.close()
        #expect(first.assignment.isEmpty)

        // The survivor takes over every partition and resumes after the stored offset: at-least-once.
        let redelivered = try await TestBroker.onThread {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if let message = try second.poll(timeoutMilliseconds: 100) { return Optional(message) }
            }
            return KafkaMessage?.none
        }
        #expect(redelivered?.keyString == "unfinished")
        #expect(redelivered?.partition == owned.partition)
        #expect(Set(second.assignment).count == 4)
    }

    @Test(.timeLimit(.minutes(2)))
    func aCrashedMembersStoredButUncommittedOffsetIsRedelivered() async throws {
        var configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("crash", partitions: [1], configuration: configuration)[0]
        let group = TestBroker.uniqueName("crash")
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        _ = try await producer.send(KafkaRecord(topic: topic, key: "job".bytes, value: "work".bytes))

        // No auto-commit before the crash; the group notices the dead member after the session timeout.
        configuration.consumer.autoCommitInterval = .seconds(600)
        configuration.consumer.heartbeatInterval = .seconds(1)
        var crashing: KafkaConsumer? = try KafkaConsumer(configuration: configuration, groupId: group)
        try crashing!.subscribe([topic])
        try await crashing!.waitForAssignment(timeout: .seconds(60))
        let processed = try await TestBroker.collect(1, from: crashing!)
        try #require(processed.count == 1)
        try crashing!.storeOffset(processed[0])
        crashing!.abandonWithoutClosing()
        crashing = nil

        let survivor = try KafkaConsumer(configuration: configuration, groupId: group)
        defer { survivor.close() }
        try survivor.subscribe([topic])
        let again = try await TestBroker.collect(1, from: survivor, timeout: .seconds(90))
        #expect(again.map(\.keyString) == ["job"])
        #expect(again.first?.offset == processed[0].offset)
    }

    @Test(.timeLimit(.minutes(2)))
    func offsetsAreStoredOnlyByStoreOffset() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("store", partitions: [1], configuration: configuration)[0]
        let group = TestBroker.uniqueName("store")
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        for index in 0..<3 {
            _ = try await producer.send(KafkaRecord(topic: topic, key: "m\(index)".bytes, value: [UInt8(index)]))
        }

        func readAll(_ count: Int, store: Bool) async throws -> [String] {
            let consumer = try KafkaConsumer(configuration: configuration, groupId: group)
            defer { consumer.close() }
            try consumer.subscribe([topic])
            try await consumer.waitForAssignment(timeout: .seconds(60))
            let messages = try await TestBroker.collect(count, from: consumer)
            if store {
                for message in messages { try consumer.storeOffset(message) }
                try consumer.commit()
            }
            return messages.compactMap(\.keyString)
        }

        // Read without storing: a restarted member reads the same records again.
        #expect(try await readAll(3, store: false) == ["m0", "m1", "m2"])
        #expect(try await readAll(3, store: true) == ["m0", "m1", "m2"])
        // Stored and committed: a restarted member continues after them.
        _ = try await producer.send(KafkaRecord(topic: topic, key: "m3".bytes, value: [3]))
        #expect(try await readAll(1, store: false) == ["m3"])
    }

    @Test func assignOnlyConsumersRefuseGroupOperations() async throws {
        let configuration = try TestBroker.configuration()
        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        #expect(throws: KafkaError.self) { try consumer.subscribe(["test.any"]) }
        #expect(throws: KafkaError.self) { try consumer.commit() }
        #expect(throws: KafkaError.self) {
            try consumer.assign([(KafkaTopicPartition(topic: "test.any", partition: 0), .stored)])
        }
        consumer.close()
        let error = #expect(throws: KafkaError.self) { _ = try consumer.poll(timeoutMilliseconds: 0) }
        #expect(error?.isClosed == true)
    }
}
