import Foundation
import Synchronization

/// Where a worker sends the reply to a request: one partition of the requester's reply topic.
public struct ReplyAddress: Sendable, Codable, Equatable, Hashable {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }
}

/// Exclusive ownership of one reply partition per requester instance (a PostgreSQL row in production).
public protocol ReplyPartitionLease: Sendable {
    /// Claims a free partition of `topic` (0..<partitionCount) for `owner` and returns it.
    func claim(topic: String, partitionCount: Int, owner: String) async throws -> Int32
    /// Extends the lease; false when `owner` no longer holds it.
    func renew(topic: String, partition: Int32, owner: String) async throws -> Bool
    func release(topic: String, partition: Int32, owner: String) async
}

/// The reply a worker sends: keyed by the correlation id, to the requester's own partition.
public func replyRecord(
    to address: ReplyAddress, correlationId: String, value: [UInt8], headers: [KafkaHeader] = []
) -> KafkaRecord {
    KafkaRecord(
        topic: address.topic, partition: address.partition, key: Array(correlationId.utf8), value: value,
        headers: headers)
}

/// Request–reply over Kafka. The instance owns one partition of its reply topic (through the lease),
/// reads only that partition from its end, and hands each reply to the request whose correlation id
/// is the reply's key. Replies for requests that already finished are dropped.
public final class KafkaRequester: Sendable {
    private enum Phase { case created, starting, running, shutDown }

    private struct State {
        var phase = Phase.created
        var address: ReplyAddress?
        var consumer: KafkaConsumer?
        var waiters: [String: any PendingRequest] = [:]
        var renewal: Task<Void, Never>?
        var readerExited: DispatchSemaphore?
        /// Where the reply reader was assigned to start (the partition's end when it attached).
        var readFrom = KafkaOffset.end
        /// While nothing has waited for a reply for `pauseWhenIdle`, the reply partition is not fetched; this is where
        /// reading resumes.
        var pausedAt: KafkaOffset?
        /// Since when no request has waited; nil while one does.
        var idleSince: ContinuousClock.Instant?
    }

    private let configuration: KafkaConfiguration
    private let replyTopic: String
    private let lease: any ReplyPartitionLease
    private let owner: String
    private let producer: KafkaProducer
    private let leaseRenewInterval: Duration
    private let pauseWhenIdle: Duration?
    private let delivered: (@Sendable (KafkaTopicPartition) -> Void)?
    private let state = Mutex(State())
    private let dropped = Atomic<Int>(0)

    /// `pauseWhenIdle`: once no request has waited for that long, the reply partition is paused (no fetches, so an
    /// idle requester costs the broker nothing) until the next request; nil fetches it always. `delivered` hears where
    /// each request's record landed, once the broker has it.
    public init(
        configuration: KafkaConfiguration, replyTopic: String, lease: any ReplyPartitionLease, owner: String,
        producer: KafkaProducer, leaseRenewInterval: Duration = .seconds(10), pauseWhenIdle: Duration? = .seconds(2),
        delivered: (@Sendable (KafkaTopicPartition) -> Void)? = nil
    ) {
        self.delivered = delivered
        self.configuration = configuration
        self.replyTopic = replyTopic
        self.lease = lease
        self.owner = owner
        self.producer = producer
        self.leaseRenewInterval = leaseRenewInterval
        self.pauseWhenIdle = pauseWhenIdle
    }

    /// The reply partition is paused for want of requests (`pauseWhenIdle`).
    public var isIdlePaused: Bool { state.withLock { $0.pausedAt != nil } }

    /// Claims a reply partition, starts reading it from its current end, and keeps the lease renewed
    /// (claiming a partition again if the lease is lost).
    public func start() async throws {
        try state.withLock { state throws(KafkaError) in
            guard state.phase == .created else { throw KafkaError.invalidArgument("requester already started") }
            state.phase = .starting
        }
        var claimed: ReplyAddress?
        var consumer: KafkaConsumer?
        do {
            let partition = try await claimPartition()
            claimed = ReplyAddress(topic: replyTopic, partition: partition)
            let reader = try KafkaConsumer(configuration: configuration, groupId: nil, autoOffsetReset: .end,
                                           readsGapsAgain: KafkaConsumer.defaultGapPatience)
            consumer = reader
            let start = try await Self.attach(reader, to: ReplyAddress(topic: replyTopic, partition: partition))
            let exited = DispatchSemaphore(value: 0)
            try state.withLock { state throws(KafkaError) in
                guard state.phase == .starting else { throw KafkaError.closed }  // shut down meanwhile
                state.phase = .running
                state.address = claimed
                state.consumer = reader
                state.readerExited = exited
                state.readFrom = start
            }
            let thread = Thread { [self] in readReplies(from: reader, exited: exited) }
            thread.name = "kafka-reply-reader"
            thread.start()
            let renewal = Task { [self] in await keepLease() }
            state.withLock { $0.renewal = renewal }
        } catch {
            if let consumer { await runOnDedicatedThread(name: "kafka-close") { consumer.close() } }
            if let claimed { await lease.release(topic: claimed.topic, partition: claimed.partition, owner: owner) }
            state.withLock { if $0.phase == .starting { $0.phase = .created } }
            throw error
        }
    }

    /// The partition replies must be sent to. Valid after `start()`.
    public var replyAddress: ReplyAddress {
        guard let address = state.withLock({ $0.address }) else {
            preconditionFailure("KafkaRequester.replyAddress read before start()")
        }
        return address
    }

    /// As `request(correlationId:deadline:expectedReplies:vet:_:)`, keeping every reply as it came.
    public func request(
        correlationId: String, deadline: ContinuousClock.Instant, expectedReplies: Int = 1,
        _ makeRecord: (ReplyAddress) throws -> KafkaRecord
    ) async throws -> [KafkaMessage] {
        try await request(correlationId: correlationId, deadline: deadline, expectedReplies: expectedReplies, vet: { $0 }, makeRecord)
    }

    /// Replies that arrived for no waiting request (late, duplicate, or not ours).
    public var droppedReplyCount: Int { dropped.load(ordering: .relaxed) }

    /// Sends the record built by `makeRecord` and waits for `expectedReplies` replies keyed by
    /// `correlationId`. Throws a `KafkaError` with `isTimeout` once `deadline` passes, `KafkaError.closed`
    /// on shutdown, the send's error if the record cannot be delivered, `CancellationError` on cancellation.
    /// `vet` checks each reply before it counts (e.g. its signature) and returns what to keep of it (e.g. its
    /// opened and decoded value); a reply it answers nil to is dropped like a stranger's.
    public func request<Kept: Sendable>(
        correlationId: String, deadline: ContinuousClock.Instant, expectedReplies: Int = 1,
        vet: @escaping @Sendable (KafkaMessage) -> Kept?,
        _ makeRecord: (ReplyAddress) throws -> KafkaRecord
    ) async throws -> [Kept] {
        guard expectedReplies >= 1 else { throw KafkaError.invalidArgument("expectedReplies must be at least 1") }
        if ContinuousClock.now >= deadline { throw KafkaError.requestDeadlinePassed }
        let waiter = ReplyWaiter(expected: expectedReplies, vet: vet)
        let address = try state.withLock { state throws(KafkaError) -> ReplyAddress in
            guard state.phase == .running, let address = state.address else {
                throw state.phase == .shutDown ? KafkaError.closed : KafkaError.invalidArgument("requester not started")
            }
            guard state.waiters[correlationId] == nil else {
                throw KafkaError.invalidArgument("correlation id already in flight")
            }
            state.waiters[correlationId] = waiter
            state.idleSince = nil
            // Under the lock, so a pause decided by the reader cannot overtake this resume.
            if let offset = state.pausedAt, let consumer = state.consumer {
                try consumer.resume(KafkaTopicPartition(topic: address.topic, partition: address.partition), from: offset)
                state.pausedAt = nil
            }
            return address
        }
        defer {
            state.withLock { state in
                if state.waiters[correlationId] === waiter { state.waiters[correlationId] = nil }
            }
        }
        let record = try makeRecord(address)

        let timer = Task {
            do {
                try await Task.sleep(until: deadline, clock: .continuous)
            } catch {
                return
            }
            waiter.finish(.failure(KafkaError.requestDeadlinePassed))
        }
        defer { timer.cancel() }
        // Not awaiting the delivery report: the deadline bounds the whole request, even a stalled send.
        let delivered = delivered
        try producer.enqueue(record) { outcome in
            switch outcome {
            case .success(let landed): delivered?(KafkaTopicPartition(topic: record.topic, partition: landed.partition))
            case .failure(let error): waiter.finish(.failure(error))
            }
        }
        return try await waiter.wait()
    }

    /// Fails waiting requests with `KafkaError.closed`, stops reading, releases the lease.
    public func shutdown() async {
        let taken = state.withLock { state -> (State, Bool)? in
            guard state.phase != .shutDown else { return nil }
            let previous = state
            state.phase = .shutDown
            state.waiters = [:]
            state.consumer = nil
            state.renewal = nil
            state.readerExited = nil
            return (previous, previous.phase == .running)
        }
        guard let (previous, wasRunning) = taken else { return }
        for waiter in previous.waiters.values { waiter.finish(failure: KafkaError.closed) }
        guard wasRunning else { return }  // a start() in progress cleans up after itself
        previous.renewal?.cancel()
        await previous.renewal?.value
        if let exited = previous.readerExited {
            await runOnDedicatedThread(name: "kafka-reply-reader-join") { exited.wait() }
        }
        if let consumer = previous.consumer {
            await runOnDedicatedThread(name: "kafka-close") { consumer.close() }
        }
        if let address = previous.address {
            await lease.release(topic: address.topic, partition: address.partition, owner: owner)
        }
    }

    // MARK: - Internals

    private func claimPartition() async throws -> Int32 {
        let topic = replyTopic
        let configuration = self.configuration
        let count = try await KafkaAdmin.partitionCount(topic: topic, configuration: configuration)
        return try await lease.claim(topic: replyTopic, partitionCount: count, owner: owner)
    }

    /// Reads `address` from its current high watermark: every reply produced after this returns is seen.
    /// (Assigning at the logical end would resolve the offset later, missing a reply produced meanwhile.)
    /// Answers the offset it starts from.
    private static func attach(_ consumer: KafkaConsumer, to address: ReplyAddress) async throws(KafkaError) -> KafkaOffset {
        let partition = KafkaTopicPartition(topic: address.topic, partition: address.partition)
        let end = try await runOnDedicatedThread(name: "kafka-watermarks") { () throws(KafkaError) in
            try consumer.watermarkOffsets(for: partition).high
        }
        try consumer.assign([(partition, .exact(end))])
        return .exact(end)
    }

    private func readReplies(from consumer: KafkaConsumer, exited: DispatchSemaphore) {
        defer { exited.signal() }
        var lastCheck = ContinuousClock.now
        while let address = state.withLock({ $0.phase == .running ? $0.address : nil }) {
            do {
                let partition = KafkaTopicPartition(topic: address.topic, partition: address.partition)
                try pauseIfIdle(consumer, partition)
                // A broker that restarted empty numbers the partition's new log from 0: read it from its start
                // rather than wait for it to pass the old position (every reply until then would be lost).
                if ContinuousClock.now - lastCheck > .seconds(1) {
                    lastCheck = .now
                    if consumer.positionIsBeyondLog(partition) {
                        report(level: 4, "reply partition \(address.topic) [\(address.partition)] starts again (the broker lost its log); reading it from the start")
                        try state.withLock { state throws(KafkaError) in
                            try consumer.assign([(partition, .beginning)])
                            state.readFrom = .beginning
                            state.pausedAt = nil
                        }
                    }
                }
                guard let message = try consumer.poll(timeoutMilliseconds: 100) else { continue }
                deliver(message)
            } catch {
                if error.isClosed { return }
                report(level: 3, "reply reader: \(error)")
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// Pauses the reply partition once no request has waited for `pauseWhenIdle`.
    private func pauseIfIdle(_ consumer: KafkaConsumer, _ partition: KafkaTopicPartition) throws(KafkaError) {
        guard let pauseWhenIdle else { return }
        try state.withLock { state throws(KafkaError) in
            guard state.pausedAt == nil, state.waiters.isEmpty else { return }
            guard let since = state.idleSince else {
                state.idleSince = .now
                return
            }
            guard ContinuousClock.now - since >= pauseWhenIdle else { return }
            state.pausedAt = try consumer.pause(partition, readingFrom: state.readFrom)
        }
    }

    private func deliver(_ message: KafkaMessage) {
        guard let correlationId = message.keyString,
            let waiter = state.withLock({ $0.waiters[correlationId] }),
            waiter.offer(message)
        else {
            dropped.add(1, ordering: .relaxed)
            return
        }
    }

    private func keepLease() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: leaseRenewInterval)
            } catch {
                return
            }
            guard let (address, consumer) = state.withLock({ state -> (ReplyAddress, KafkaConsumer)? in
                guard state.phase == .running, let address = state.address, let consumer = state.consumer else {
                    return nil
                }
                return (address, consumer)
            }) else { return }
            do {
                if try await lease.renew(topic: address.topic, partition: address.partition, owner: owner) { continue }
            } catch {
                // Unknown outcome (database unreachable): keep reading and try again next round.
                report(level: 4, "lease renewal failed: \(error)")
                continue
            }
            report(level: 4, "lease on \(address.topic) [\(address.partition)] lost; claiming again")
            do {
                let partition = try await claimPartition()
                let renewed = ReplyAddress(topic: replyTopic, partition: partition)
                if renewed != address { try await Self.attach(consumer, to: renewed) }
                state.withLock { if $0.phase == .running { $0.address = renewed } }
            } catch {
                report(level: 3, "reclaiming a reply partition failed: \(error)")
            }
        }
    }

    private func report(level: Int32, _ message: String) {
        configuration.report(level: level, facility: "REQUESTER", message: message, clientName: owner)
    }
}

extension KafkaError {
    /// The request's deadline passed before all replies arrived.
    static var requestDeadlinePassed: KafkaError {
        var error = KafkaError.timedOut
        error.message = "no reply before the request deadline"
        return error
    }
}

/// A request waiting for its replies, whatever it keeps of each.
protocol PendingRequest: AnyObject, Sendable {
    /// Vets and adds a reply; false when it does not count (refused by the vet) or comes late.
    func offer(_ message: KafkaMessage) -> Bool
    func finish(failure: any Error)
}

/// Collects the replies of one request, each as its vet keeps it; completes exactly once (all replies, deadline,
/// failure, cancel).
final class ReplyWaiter<Kept: Sendable>: PendingRequest {
    private enum State {
        case collecting([Kept], CheckedContinuation<[Kept], any Error>?)
        case finished(Result<[Kept], any Error>?)  // nil once handed to the continuation
    }

    let expected: Int
    let vet: @Sendable (KafkaMessage) -> Kept?
    private let state = Mutex<State>(.collecting([], nil))

    init(expected: Int, vet: @escaping @Sendable (KafkaMessage) -> Kept?) {
        self.expected = expected
        self.vet = vet
    }

    func offer(_ message: KafkaMessage) -> Bool {
        guard let message = vet(message) else { return false }
        let outcome = state.withLock { state -> (accepted: Bool, resume: CheckedContinuation<[Kept], any Error>?, replies: [Kept]) in
            guard case .collecting(var replies, let continuation) = state else { return (false, nil, []) }
            replies.append(message)
            guard replies.count >= expected else {
                state = .collecting(replies, continuation)
                return (true, nil, [])
            }
            if let continuation {
                state = .finished(nil)
                return (true, continuation, replies)
            }
            state = .finished(.success(replies))
            return (true, nil, [])
        }
        outcome.resume?.resume(returning: outcome.replies)
        return outcome.accepted
    }

    func finish(failure: any Error) { finish(.failure(failure)) }

    func finish(_ result: Result<[Kept], any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<[Kept], any Error>? in
            guard case .collecting(_, let continuation) = state else { return nil }
            state = continuation == nil ? .finished(result) : .finished(nil)
            return continuation
        }
        continuation?.resume(with: result)
    }

    func wait() async throws -> [Kept] {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<[Kept], any Error>? in
                    switch state {
                    case .collecting(let replies, _):
                        state = .collecting(replies, continuation)
                        return nil
                    case .finished(let result):
                        state = .finished(nil)
                        return result ?? .failure(CancellationError())
                    }
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
        }
    }
}

/// A lease that coordinates requesters inside one process only: for tests, benchmarks and
/// single-instance tools. Services running as several processes use the PostgreSQL lease.
public actor InProcessReplyPartitionLease: ReplyPartitionLease {
    public struct NoFreePartition: Error, CustomStringConvertible {
        public var topic: String
        public var description: String { "every reply partition of \(topic) is leased" }
    }

    private var owners: [ReplyAddress: String] = [:]

    public init() {}

    public func claim(topic: String, partitionCount: Int, owner: String) throws -> Int32 {
        for partition in 0..<Int32(partitionCount) {
            let address = ReplyAddress(topic: topic, partition: partition)
            if owners[address] == nil || owners[address] == owner {
                owners[address] = owner
                return partition
            }
        }
        throw NoFreePartition(topic: topic)
    }

    public func renew(topic: String, partition: Int32, owner: String) -> Bool {
        owners[ReplyAddress(topic: topic, partition: partition)] == owner
    }

    public func release(topic: String, partition: Int32, owner: String) {
        let address = ReplyAddress(topic: topic, partition: partition)
        if owners[address] == owner { owners[address] = nil }
    }

    /// Hands the partition to `newOwner` (or frees it), as an expired lease taken over would.
    public func reassign(topic: String, partition: Int32, to newOwner: String?) {
        owners[ReplyAddress(topic: topic, partition: partition)] = newOwner
    }

    /// The current holder of a partition.
    public func owner(topic: String, partition: Int32) -> String? {
        owners[ReplyAddress(topic: topic, partition: partition)]
    }
}
