import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import KafkaClient
import ServiceKit
import Synchronization
import Testing

/// The job consumer's loop over an in-memory message source, in milliseconds: messages are signed and sealed with the
/// services' real keys (a gateway signs, the matcher consumes), the handler's dispositions are the test's, and what the
/// loop stores and dead-letters is recorded. Against the broker: KafkaClientTests and IntegrationTests'
/// MessageAuthenticationTests, MatcherFailoverTests and the chaos run.
@Suite struct JobConsumerTests {
    let runtime: ServiceRuntime
    let gateway: MessageAuthenticator
    let source = MessageQueue()
    let sink = RecordedSends()

    init() throws {
        let environment = OfflineServiceEnvironment()
        runtime = try ServiceRuntime(configuration: try CommonConfiguration(serviceName: "matcher-worker", defaultAdminPort: 0,
                                                                           environment: Environment(environment.values(for: "matcher-worker"))))
        let encodedSeed = try #require(environment.keys.seeds["auth-gateway"])
        let seed = try #require(Data(base64Encoded: encodedSeed))
        gateway = MessageAuthenticator(keys: try ServiceKeys(service: "auth-gateway", seed: Array(seed), publicKeys: environment.keys.publicKeys),
                                       topics: runtime.topics, metrics: MetricsRegistry())
    }

    var topic: String { runtime.topics.faceJobs }

    /// A job as the gateway sends it: sealed to the matcher and signed, at `offset` of partition 0.
    func job(_ text: String, offset: Int64) -> KafkaMessage {
        let signed = gateway.sign(KafkaRecord(topic: topic, key: Array("key".utf8), value: Array(text.utf8)))
        return KafkaMessage(topic: topic, partition: 0, offset: offset, key: signed.key, value: signed.value, headers: signed.headers)
    }

    func consumer(concurrency: Int = 1, _ handler: @escaping @Sendable (KafkaMessage) async -> JobDisposition) -> JobConsumer {
        JobConsumer(name: "test-jobs", runtime: runtime, topic: topic, groupId: "test", source: source, producer: sink,
                    concurrency: concurrency, maxAttempts: 3, handler: handler)
    }

    @Test func aSignedJobIsHandledOpenedAndItsOffsetStored() async throws {
        let seen = Mutex<[String]>([])
        let jobs = consumer { message in
            seen.withLock { $0.append(String(decoding: message.value, as: UTF8.self)) }
            return .completed
        }
        try await whileRunning([jobs]) {
            source.send(job("identify obama2.jpg", offset: 0))
            try await source.waitForStored(1)
            #expect(seen.withLock { $0 } == ["identify obama2.jpg"], "the handler sees the job opened")
            #expect(source.stored == [0] && sink.records.isEmpty)
        }
    }

    @Test func aJobThatKeepsFailingIsTriedThreeTimesThenDeadLetteredWithoutItsPayload() async throws {
        let tries = Atomic<Int>(0)
        let jobs = consumer { _ in
            tries.add(1, ordering: .relaxed)
            return .retry("database away")
        }
        try await whileRunning([jobs]) {
            source.send(job("a secret photo", offset: 7))
            try await source.waitForStored(1)
            #expect(tries.load(ordering: .relaxed) == 3)
            let letter = try #require(sink.records.first)
            #expect(letter.topic == topic + ".dlq" && letter.value.isEmpty)
            #expect(letter.headers.first { $0.key == DeadLetterHeader.attempts }?.value == Array("3".utf8))
            #expect(letter.headers.first { $0.key == DeadLetterHeader.originalOffset }?.value == Array("7".utf8))
            #expect(source.stored == [7], "the partition moves on")
        }
    }

    @Test func aRejectedJobIsDeadLetteredAtOnce() async throws {
        let tries = Atomic<Int>(0)
        let jobs = consumer { _ in
            tries.add(1, ordering: .relaxed)
            return .reject("broken envelope")
        }
        try await whileRunning([jobs]) {
            source.send(job("not an envelope", offset: 0))
            try await source.waitForStored(1)
            #expect(tries.load(ordering: .relaxed) == 1 && sink.records.count == 1)
        }
    }

    @Test func anUnsignedOrTamperedMessageIsNeverHandled() async throws {
        let handled = Atomic<Int>(0)
        let jobs = consumer { _ in
            handled.add(1, ordering: .relaxed)
            return .completed
        }
        try await whileRunning([jobs]) {
            source.send(KafkaMessage(topic: topic, partition: 0, offset: 0, key: nil, value: Array("forged".utf8)))
            var tampered = job("identify", offset: 1)
            tampered.value[tampered.value.count - 1] ^= 1
            source.send(tampered)
            try await source.waitForStored(2)
            #expect(handled.load(ordering: .relaxed) == 0)
            #expect(sink.records.count == 2 && sink.records.allSatisfy { $0.value.isEmpty })
        }
    }

    @Test func anOffsetIsStoredOnlyOnceEveryEarlierJobOfItsPartitionFinished() async throws {
        let released = Atomic<Bool>(false)
        let running = Atomic<Int>(0), most = Atomic<Int>(0)
        let jobs = consumer(concurrency: 2) { message in
            let now = running.add(1, ordering: .relaxed).newValue
            most.max(now, ordering: .relaxed)
            while message.offset == 0, !released.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
            running.subtract(1, ordering: .relaxed)
            return .completed
        }
        try await whileRunning([jobs]) {
            for offset in 0..<4 { source.send(job("job \(offset)", offset: Int64(offset))) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(source.stored.isEmpty, "job 0 still runs: nothing after it may be stored")
            #expect(most.load(ordering: .relaxed) <= 2, "at most `concurrency` jobs at once")
            released.store(true, ordering: .relaxed)
            try await source.waitForStored(1)
            try await Task.sleep(for: .milliseconds(100))
            #expect(source.stored.last == 3 && source.stored.allSatisfy { $0 <= 3 })
        }
    }
}

// MARK: - Twins

/// Messages handed to the consumer as a broker would, and the offsets it stores.
final class MessageQueue: JobSource {
    private let stream: AsyncThrowingStream<KafkaMessage, any Error>
    private let continuation: AsyncThrowingStream<KafkaMessage, any Error>.Continuation
    private let state = Mutex<[Int64]>([])
    var stored: [Int64] { state.withLock { $0 } }

    init() { (stream, continuation) = AsyncThrowingStream.makeStream() }

    func send(_ message: KafkaMessage) { continuation.yield(message) }

    /// Waits (up to 5 s) until `count` offsets have been stored.
    func waitForStored(_ count: Int) async throws {
        for _ in 0..<500 where stored.count < count { try await Task.sleep(for: .milliseconds(10)) }
        #expect(stored.count >= count, "offsets stored: \(stored)")
    }

    func subscribe(_ topics: [String]) throws {}
    func messages() -> AsyncThrowingStream<KafkaMessage, any Error> { stream }
    func storeOffset(_ message: KafkaMessage) throws { state.withLock { $0.append(message.offset) } }
    func lag() async throws -> [(partition: KafkaTopicPartition, messages: Int64)] { [] }
    func waitForAssignment(timeout: Duration) async throws {}
    func close() { continuation.finish() }
}

final class RecordedSends: RecordSink {
    private let state = Mutex<[KafkaRecord]>([])
    var records: [KafkaRecord] { state.withLock { $0 } }

    func send(_ record: KafkaRecord) async throws -> (partition: Int32, offset: Int64) {
        state.withLock { $0.append(record) }
        return (0, 0)
    }
}
