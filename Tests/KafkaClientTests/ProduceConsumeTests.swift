import Foundation
import KafkaClient
import Testing

@Suite struct ProduceConsumeTests {
    @Test func producesAndConsumesKeysAndHeaders() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("plain", partitions: [1], configuration: configuration)[0]
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }

        let records = [
            KafkaRecord(
                topic: topic, key: "job-1".bytes, value: "first".bytes,
                headers: [KafkaHeader(key: "traceparent", value: "00-abc-def-01"), KafkaHeader(key: "bin", value: [0, 255, 7])]),
            KafkaRecord(topic: topic, key: nil, value: "second, no key".bytes),
            KafkaRecord(topic: topic, key: "job-3".bytes, value: [], headers: [KafkaHeader(key: "empty", value: [])]),
        ]
        var offsets: [Int64] = []
        for record in records {
            let delivered = try await producer.send(record)
            #expect(delivered.partition == 0)
            offsets.append(delivered.offset)
        }
        #expect(offsets == [0, 1, 2])

        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        try consumer.assign([(KafkaTopicPartition(topic: topic, partition: 0), .beginning)])
        #expect(consumer.assignment == [KafkaTopicPartition(topic: topic, partition: 0)])
        let messages = try await TestBroker.collect(3, from: consumer)

        try #require(messages.count == 3)
        #expect(messages.map(\.offset) == [0, 1, 2])
        #expect(messages.allSatisfy { $0.topic == topic && $0.partition == 0 && $0.timestamp != nil })
        #expect(messages[0].key == "job-1".bytes)
        #expect(messages[0].value.text == "first")
        #expect(messages[0].header("traceparent")?.text == "00-abc-def-01")
        #expect(messages[0].header("bin") == [0, 255, 7])
        #expect(messages[0].headers.map(\.key) == ["traceparent", "bin"])
        #expect(messages[1].key == nil)
        #expect(messages[1].headers.isEmpty)
        #expect(messages[1].value.text == "second, no key")
        #expect(messages[2].value.isEmpty)
        #expect(messages[2].header("empty") == [])
        #expect(messages[2].header("missing") == nil)
    }
}

extension ProduceConsumeTests {
    @Test func deliversAnEightMegabyteMessage() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("large", partitions: [1], configuration: configuration)[0]
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        let value = (0..<(8 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
        let delivered = try await producer.send(KafkaRecord(topic: topic, key: "big".bytes, value: value))
        #expect(delivered.offset == 0)

        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        try consumer.assign([(KafkaTopicPartition(topic: topic, partition: 0), .beginning)])
        let messages = try await TestBroker.collect(1, from: consumer)
        try #require(messages.count == 1)
        #expect(messages[0].value.count == value.count)
        #expect(messages[0].value == value)
    }

    @Test(.timeLimit(.minutes(1)))
    func assignAtEndSeesOnlyNewMessages() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("end", partitions: [1], configuration: configuration)[0]
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        for index in 0..<3 {
            _ = try await producer.send(KafkaRecord(topic: topic, key: nil, value: "old-\(index)".bytes))
        }

        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        try consumer.assign([(KafkaTopicPartition(topic: topic, partition: 0), .end)])
        let stream = consumer.messages()
        let reader = Task {
            var seen: [String] = []
            for try await message in stream {
                seen.append(message.value.text)
                if seen.count == 3 { break }
            }
            return seen
        }
        // The end offset is resolved asynchronously, so keep producing until the reader has three.
        let writer = Task {
            var index = 0
            while !Task.isCancelled {
                _ = try await producer.send(KafkaRecord(topic: topic, key: nil, value: "new-\(index)".bytes))
                index += 1
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let seen = try await reader.value
        writer.cancel()
        #expect(seen.count == 3)
        #expect(seen.allSatisfy { $0.hasPrefix("new-") }, "saw \(seen)")
    }

    /// A reader that asks for the next message after the consumer closed (while it was busy with the last one, so
    /// nobody was waiting when the stream's thread noticed and ended) gets the end of the stream at once.
    @Test(.timeLimit(.minutes(1)))
    func aStreamReadAfterTheConsumerClosedEnds() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("closed", partitions: [1], configuration: configuration)[0]
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        _ = try await producer.send(KafkaRecord(topic: topic, key: nil, value: "only".bytes))
        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        try consumer.assign([(KafkaTopicPartition(topic: topic, partition: 0), .beginning)])
        var messages = consumer.messages().makeAsyncIterator()
        #expect(try await messages.next()?.value.text == "only")
        consumer.close()
        try await Task.sleep(for: .milliseconds(600))  // the thread wakes every 200 ms, sees the close and ends
        let started = ContinuousClock.now
        #expect(try await messages.next()?.value.text == nil)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test(.timeLimit(.minutes(1)))
    func sendFailsWhenTheBrokerIsUnreachable() async throws {
        var configuration = KafkaConfiguration(brokers: "127.0.0.1:1", clientId: "facegate-test-unreachable")
        configuration.producer.messageTimeout = .milliseconds(1500)
        configuration.logHandler = { _ in }
        let producer = try KafkaProducer(configuration: configuration)
        defer { producer.close() }
        let error = await #expect(throws: KafkaError.self) {
            _ = try await producer.send(KafkaRecord(topic: "test.unreachable", key: nil, value: "x".bytes))
        }
        #expect(error?.isTimeout == true)
        #expect(error?.isRetriable == true)
    }

    @Test(.timeLimit(.minutes(1)))
    func closeSettlesEverySendAndLaterSendsFail() async throws {
        let configuration = try TestBroker.configuration()
        let topic = try await TestBroker.makeTopics("close", partitions: [1], configuration: configuration)[0]
        let producer = try KafkaProducer(configuration: configuration)
        let sends = (0..<50).map { index in
            Task { try await producer.send(KafkaRecord(topic: topic, key: nil, value: "m\(index)".bytes)) }
        }
        try await TestBroker.onThread { producer.close() }
        // Every send settles: delivered by the flush, or failed because the producer closed first.
        for send in sends {
            do {
                _ = try await send.value
            } catch let error as KafkaError {
                #expect(error.isClosed, "\(error)")
            }
        }
        let error = await #expect(throws: KafkaError.self) {
            _ = try await producer.send(KafkaRecord(topic: topic, key: nil, value: [1]))
        }
        #expect(error?.isClosed == true)
        producer.close()
    }
}
