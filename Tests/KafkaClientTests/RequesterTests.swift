import Foundation
import KafkaClient
import Synchronization
import Testing

/// A worker that answers jobs from `jobsTopic`: it reads the reply address from headers and the
/// correlation id from the key. Job values: `echo:<text>`, `late:<ms>`, `split:<n>`.
private final class EchoWorker: Sendable {
    static let replyTopicHeader = "reply.topic"
    static let replyPartitionHeader = "reply.partition"

    private let consumer: KafkaConsumer
    private let producer: KafkaProducer
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let seen = Atomic<Int>(0)

    /// Jobs received so far.
    var jobsSeen: Int { seen.load(ordering: .relaxed) }

    init(configuration: KafkaConfiguration, jobsTopic: String, producer: KafkaProducer) throws {
        consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        try consumer.assign([(KafkaTopicPartition(topic: jobsTopic, partition: 0), .beginning)])
        self.producer = producer
        let jobs = consumer.messages()
        let run = Task { [producer, self] in
            do {
                for try await job in jobs {
                    seen.add(1, ordering: .relaxed)
                    Task { try? await EchoWorker.answer(job, producer: producer) }
                }
            } catch {}
        }
        task.withLock { $0 = run }
    }

    static func jobRecord(topic: String, to address: ReplyAddress, correlationId: String, job: String) -> KafkaRecord {
        KafkaRecord(
            topic: topic, key: correlationId.bytes, value: job.bytes,
            headers: [
                KafkaHeader(key: replyTopicHeader, value: address.topic),
                KafkaHeader(key: replyPartitionHeader, value: String(address.partition)),
            ])
    }

    private static func answer(_ job: KafkaMessage, producer: KafkaProducer) async throws {
        guard let topic = job.header(replyTopicHeader)?.text,
            let partition = job.header(replyPartitionHeader).flatMap({ Int32($0.text) }),
            let correlationId = job.keyString
        else { return }
        let address = ReplyAddress(topic: topic, partition: partition)
        let command = job.value.text
        var parts = 1
        if command.hasPrefix("late:"), let delay = Int(command.dropFirst(5)) {
            try await Task.sleep(for: .milliseconds(delay))
        } else if command.hasPrefix("split:"), let count = Int(command.dropFirst(6)) {
            parts = count
        }
        for part in 0..<parts {
            _ = try await producer.send(
                replyRecord(
                    to: address, correlationId: correlationId, value: "\(command)#\(part)".bytes,
                    headers: [KafkaHeader(key: "part", value: String(part))]))
        }
    }

    func stop() {
        task.withLock { $0?.cancel() }
        consumer.close()
    }
}

@Suite struct RequesterTests {
    private struct Setup {
        let configuration: KafkaConfiguration
        let jobsTopic: String
        let replyTopic: String
        let producer: KafkaProducer
        let worker: EchoWorker
        let lease = InProcessReplyPartitionLease()

        init(replyPartitions: Int = 2) async throws {
            configuration = try TestBroker.configuration()
            let topics = try await TestBroker.makeTopics("rr", partitions: [1, replyPartitions], configuration: configuration)
            jobsTopic = topics[0]
            replyTopic = topics[1]
            producer = try KafkaProducer(configuration: configuration)
            worker = try EchoWorker(configuration: configuration, jobsTopic: jobsTopic, producer: producer)
        }

        func requester(_ owner: String, renewEvery: Duration = .seconds(10), pauseWhenIdle: Duration? = .seconds(2)) -> KafkaRequester {
            KafkaRequester(
                configuration: configuration, replyTopic: replyTopic, lease: lease, owner: owner, producer: producer,
                leaseRenewInterval: renewEvery, pauseWhenIdle: pauseWhenIdle)
        }

        func ask(
            _ requester: KafkaRequester, _ job: String, id: String = UUID().uuidString,
            within timeout: Duration = .seconds(20), replies: Int = 1
        ) async throws -> [KafkaMessage] {
            try await requester.request(
                correlationId: id, deadline: .now + timeout, expectedReplies: replies
            ) { address in
                EchoWorker.jobRecord(topic: jobsTopic, to: address, correlationId: id, job: job)
            }
        }

        func tearDown() {
            worker.stop()
            producer.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func twoRequestersEachReceiveOnlyTheirOwnReplies() async throws {
        let setup = try await Setup()
        defer { setup.tearDown() }
        let first = setup.requester("instance-a")
        let second = setup.requester("instance-b")
        try await first.start()
        try await second.start()
        #expect(first.replyAddress.topic == setup.replyTopic)
        #expect(Set([first.replyAddress.partition, second.replyAddress.partition]) == [0, 1])
        #expect(await setup.lease.owner(topic: setup.replyTopic, partition: first.replyAddress.partition) == "instance-a")

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, requester) in [("a", first), ("b", second)] {
                for index in 0..<5 {
                    group.addTask {
                        let id = "\(name)-\(index)-\(UUID().uuidString)"
                        let replies = try await setup.ask(requester, "echo:\(name)\(index)", id: id)
                        #expect(replies.count == 1)
                        #expect(replies[0].keyString == id)
                        #expect(replies[0].value.text == "echo:\(name)\(index)#0")
                        #expect(replies[0].partition == requester.replyAddress.partition)
                    }
                }
            }
            try await group.waitForAll()
        }
        // Neither instance ever saw a reply meant for the other.
        #expect(first.droppedReplyCount == 0)
        #expect(second.droppedReplyCount == 0)

        await first.shutdown()
        await second.shutdown()
        #expect(await setup.lease.owner(topic: setup.replyTopic, partition: 0) == nil)
        #expect(await setup.lease.owner(topic: setup.replyTopic, partition: 1) == nil)
    }

    /// An idle requester stops fetching its reply partition; the next request resumes it before the job is sent, so
    /// its reply is read, and one that waits keeps the partition fetched.
    @Test(.timeLimit(.minutes(1)))
    func anIdleReplyPartitionIsPausedUntilTheNextRequest() async throws {
        let setup = try await Setup()
        defer { setup.tearDown() }
        let requester = setup.requester("instance-a", pauseWhenIdle: .milliseconds(300))
        let always = setup.requester("instance-b", pauseWhenIdle: nil)
        try await requester.start()
        try await always.start()
        func waitUntilPaused() async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while !requester.isIdlePaused, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            return requester.isIdlePaused
        }
        #expect(try await waitUntilPaused(), "paused with nothing asked")
        for round in 0..<3 {
            let replies = try await setup.ask(requester, "echo:\(round)")
            #expect(replies.map(\.value.text) == ["echo:\(round)#0"])
            #expect(!requester.isIdlePaused)
            #expect(try await waitUntilPaused(), "paused again after round \(round)")
        }
        // A request outlasting the idle period keeps the partition fetched, and its reply arrives.
        let late = try await setup.ask(requester, "late:2500")
        #expect(late.map(\.value.text) == ["late:2500#0"])
        _ = try await setup.ask(always, "echo:x")
        try await Task.sleep(for: .milliseconds(1500))
        #expect(!always.isIdlePaused, "without pauseWhenIdle the partition is always fetched")
        await requester.shutdown()
        await always.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func aPassedDeadlineThrowsATimeoutAndTheLateReplyIsDropped() async throws {
        let setup = try await Setup()
        defer { setup.tearDown() }
        // Fetched always: paused when idle, the late reply would wait for the next request, which here reuses its id.
        let requester = setup.requester("instance-late", pauseWhenIdle: nil)
        try await requester.start()

        let error = await #expect(throws: KafkaError.self) {
            _ = try await setup.ask(requester, "late:1500", id: "slow-job", within: .milliseconds(300))
        }
        #expect(error?.isTimeout == true)
        // The reply still arrives, finds nobody waiting, and is dropped.
        #expect(await TestBroker.eventually { requester.droppedReplyCount == 1 })

        let replies = try await setup.ask(requester, "echo:after", id: "slow-job")
        #expect(replies.map(\.value.text) == ["echo:after#0"])
        await requester.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func expectedRepliesCollectsEveryPartialReply() async throws {
        let setup = try await Setup()
        defer { setup.tearDown() }
        let requester = setup.requester("instance-shards")
        try await requester.start()

        let replies = try await setup.ask(requester, "split:2", replies: 2)
        #expect(replies.count == 2)
        #expect(Set(replies.compactMap { $0.header("part")?.text }) == ["0", "1"])
        #expect(Set(replies.map(\.value.text)) == ["split:2#0", "split:2#1"])
        await requester.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func shutdownFailsWaitingRequestsAndLaterRequests() async throws {
        let setup = try await Setup()
        defer { setup.tearDown() }
        let requester = setup.requester("instance-stop")
        try await requester.start()

        let waiting = Task { try await setup.ask(requester, "late:5000") }
        try #require(await TestBroker.eventually { setup.worker.jobsSeen == 1 })
        await requester.shutdown()
        let error = await #expect(throws: KafkaError.self) { _ = try await waiting.value }
        #expect(error?.isClosed == true)
        await #expect(throws: KafkaError.self) { _ = try await setup.ask(requester, "echo:x") }
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingARequestStopsTheWait() async throws {
        let setup = try await Setup()
        defer { setup.tearDown() }
        let requester = setup.requester("instance-cancel")
        try await requester.start()

        let waiting = Task { try await setup.ask(requester, "late:3000", id: "cancelled-job") }
        try #require(await TestBroker.eventually { setup.worker.jobsSeen == 1 })
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        // The correlation id is free again at once.
        let replies = try await setup.ask(requester, "echo:again", id: "cancelled-job")
        #expect(replies.first?.value.text == "echo:again#0")
        await requester.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func aLostLeaseIsClaimedAgainOnAnotherPartition() async throws {
        let setup = try await Setup(replyPartitions: 3)
        defer { setup.tearDown() }
        let requester = setup.requester("instance-moved", renewEvery: .milliseconds(100))
        try await requester.start()
        let original = requester.replyAddress
        await setup.lease.reassign(topic: original.topic, partition: original.partition, to: "someone-else")

        #expect(await TestBroker.eventually { requester.replyAddress != original })
        let moved = requester.replyAddress
        #expect(await setup.lease.owner(topic: moved.topic, partition: moved.partition) == "instance-moved")
        let replies = try await setup.ask(requester, "echo:moved")
        #expect(replies.first?.partition == moved.partition)
        await requester.shutdown()
    }
}
