internal import CKafka
import Foundation
import Synchronization

/// A consumer: a group member (`subscribe`) or a reader of explicitly assigned partitions (`assign`).
///
/// Offsets are stored only by `storeOffset` (after the message's effects are committed) and committed
/// by librdkafka's auto-commit timer, by `commit()`, on rebalance and on `close()`: at-least-once delivery.
public final class KafkaConsumer: Sendable {
    /// Wrapper defaults; `KafkaConfiguration.properties` overrides them.
    public static let defaultProperties: [String: String] = [
        "enable.auto.offset.store": "false",
        "enable.auto.commit": "true",
        "fetch.wait.max.ms": "5",
        "max.partition.fetch.bytes": "10485760",
        "fetch.max.bytes": "52428800",
        "receive.message.max.bytes": "104857600",
        "socket.nagle.disable": "true",
        // Failure detection in 10 s instead of 45 s; tansu also delays each group join by half of it.
        "session.timeout.ms": "10000",
    ]

    let client: RDKafkaClient
    public let groupId: String?
    /// Serialises polls and holds messages polled on behalf of a later caller (see `waitForAssignment`).
    private let pollGate = Mutex<[KafkaMessage]>([])
    private let closed = Atomic<Bool>(false)
    /// With `readsGapsAgain`: how long a partition is read again from an offset that was skipped before reading on.
    private let gapPatience: Duration?
    /// The patience of job consumers and reply readers: a skipped offset has been seen to arrive at the first re-read.
    public static let defaultGapPatience = Duration.milliseconds(500)
    private let continuity = Mutex(OffsetContinuity())

    /// - Parameter readsGapsAgain: a message whose offset lies past the next one expected on its partition is held back,
    ///   and the partition read again from the expected offset, for up to that long; then the gap is reported and
    ///   reading goes on. The local broker (tansu 0.6) has been seen to answer a fetch with a record while an earlier
    ///   one, written at the same moment by another producer, was not yet readable: without this, the earlier record
    ///   (a reply, a job) is never delivered. Messages keep their order. nil (topics that are compacted) reads on at once.
    public init(
        configuration: KafkaConfiguration, groupId: String?, autoOffsetReset: KafkaOffset = .beginning,
        readsGapsAgain gapPatience: Duration? = nil
    ) throws(KafkaError) {
        self.gapPatience = gapPatience
        var defaults = Self.defaultProperties
        switch autoOffsetReset {
        case .beginning: defaults["auto.offset.reset"] = "earliest"
        case .end: defaults["auto.offset.reset"] = "latest"
        case .stored, .exact:
            throw KafkaError.invalidArgument("autoOffsetReset must be .beginning or .end")
        }
        if let groupId {
            defaults["group.id"] = groupId
        } else {
            // rd_kafka_assign needs a group handle even when no group is joined; this id is never
            // committed to (auto commit off, storeOffset/commit refuse) nor joined (subscribe refuses).
            defaults["group.id"] = "facegate.assign-only.\(UUID().uuidString)"
            defaults["enable.auto.commit"] = "false"
        }
        self.groupId = groupId
        let context = RDKafkaClientContext(configuration: configuration)
        client = try RDKafkaClient(
            kind: .consumer,
            properties: configuration.librdkafkaProperties(for: .consumer, defaults: defaults),
            context: context,
            configure: { rd_kafka_conf_set_rebalance_cb($0, rdkafkaRebalanceCallback) })
        // Logs, errors and rebalances are all served by rd_kafka_consumer_poll.
        _ = rd_kafka_poll_set_consumer(client.handle)
    }

    deinit {
        close()
    }

    /// Joins the group for `topics`; partitions arrive through rebalances served while polling.
    public func subscribe(_ topics: [String]) throws(KafkaError) {
        try ensureOpen()
        guard groupId != nil else { throw KafkaError.invalidArgument("subscribe needs a group id") }
        let list = RDKafkaTopicPartitionList(capacity: topics.count)
        for topic in topics {
            list.add(topic: topic, partition: RD_KAFKA_PARTITION_UA, offset: Int64(RD_KAFKA_OFFSET_INVALID))
        }
        let err = rd_kafka_subscribe(client.handle, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
    }

    /// Reads exactly these partitions from the given offsets, replacing any previous assignment.
    public func assign(_ partitions: [(KafkaTopicPartition, KafkaOffset)]) throws(KafkaError) {
        try ensureOpen()
        if groupId == nil, partitions.contains(where: { $0.1 == .stored }) {
            throw KafkaError.invalidArgument(".stored offsets need a group id")
        }
        let list = RDKafkaTopicPartitionList(capacity: partitions.count)
        for (partition, offset) in partitions {
            list.add(topic: partition.topic, partition: partition.partition, offset: offset.rawOffset)
        }
        let err = rd_kafka_assign(client.handle, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
        client.context.refreshAssignment(client.handle)
    }

    /// Stops fetching `partition` while keeping it assigned (a paused partition costs the broker no fetches) and
    /// answers where reading stopped: the next offset the application would have read, or `start` when it has read
    /// nothing of the partition since it was assigned from there. A later `assign` unpauses.
    public func pause(_ partition: KafkaTopicPartition, readingFrom start: KafkaOffset) throws(KafkaError) -> KafkaOffset {
        try ensureOpen()
        let list = RDKafkaTopicPartitionList(capacity: 1)
        list.add(topic: partition.topic, partition: partition.partition, offset: Int64(RD_KAFKA_OFFSET_INVALID))
        // Paused first, then asked where: a message polled by another thread meanwhile is then behind the answer.
        var err = rd_kafka_pause_partitions(client.handle, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
        err = rd_kafka_position(client.handle, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
        // A message held back for a gap was polled, so librdkafka's position is past the gap: reading resumes at the gap.
        let held = continuity.withLock { $0.heldBack(partition) }
        let position = held ?? list.pointer.pointee.elems[0].offset
        return position >= 0 ? .exact(position) : start
    }

    /// Stops fetching an idle group partition (see `pause`); where nothing was read since it was assigned, reading resumes at
    /// the group's committed offset, or at the beginning when none is (where `auto.offset.reset` started it). Blocks the
    /// calling thread for that lookup.
    public func pauseIdle(_ partition: KafkaTopicPartition) throws(KafkaError) -> KafkaOffset {
        let committed = try committedOffsets(for: [partition], timeoutMilliseconds: 5000).first ?? nil
        return try pause(partition, readingFrom: committed.map { .exact($0) } ?? .beginning)
    }

    /// Clears any pause on these partitions without moving their position: what a new assignment needs, whose fetch
    /// starts at the group's committed offsets.
    public func resumeAsAssigned(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        try ensureOpen()
        guard !partitions.isEmpty else { return }
        let list = RDKafkaTopicPartitionList(capacity: partitions.count)
        for partition in partitions {
            list.add(topic: partition.topic, partition: partition.partition, offset: Int64(RD_KAFKA_OFFSET_INVALID))
        }
        let err = rd_kafka_resume_partitions(client.handle, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
    }

    /// Whether the broker holds a message of `partition` at or after `offset` (asked of the broker; blocks the caller).
    public func hasMessages(_ partition: KafkaTopicPartition, from offset: KafkaOffset) throws(KafkaError) -> Bool {
        let marks = try watermarkOffsets(for: partition, timeoutMilliseconds: 5000)
        switch offset {
        case .exact(let next): return marks.high > next
        case .beginning, .stored: return marks.high > marks.low
        case .end: return false
        }
    }

    /// Changes whenever the assignment does (a rebalance, `assign`).
    public var assignmentGeneration: Int { client.context.assignmentChanges.load(ordering: .acquiring) }

    /// Fetches a paused partition again from `offset` (what `pause` answered), at once: a plain resume waits for the
    /// fetcher's next turn, measured at about a second against the local broker.
    public func resume(_ partition: KafkaTopicPartition, from offset: KafkaOffset) throws(KafkaError) {
        try ensureOpen()
        let list = RDKafkaTopicPartitionList(capacity: 1)
        list.add(topic: partition.topic, partition: partition.partition, offset: offset.rawOffset)
        let err = rd_kafka_resume_partitions(client.handle, list.pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
        // Asynchronous (no wait): the seek restarts the fetch from `offset` on the broker thread's next pass.
        if let failure = rd_kafka_seek_partitions(client.handle, list.pointer, 0) {
            defer { rd_kafka_error_destroy(failure) }
            throw KafkaError(rd_kafka_error_code(failure))
        }
    }

    /// The next message, or nil when none arrived within the timeout. Blocks the calling thread:
    /// call it from a dedicated thread. Throws `KafkaError.closed` after `close()`, and on fatal errors;
    /// transient consumer errors (broker down, unknown topic) go to the log and librdkafka retries.
    public func poll(timeoutMilliseconds: Int) throws(KafkaError) -> KafkaMessage? {
        try pollGate.withLock { stash throws(KafkaError) -> KafkaMessage? in
            try ensureOpen()
            if !stash.isEmpty { return stash.removeFirst() }
            return try pollOnce(timeoutMilliseconds: timeoutMilliseconds)
        }
    }

    /// A stream that polls on its own thread, one message per demand, until `close()`, cancellation
    /// of the iterating task, or a fatal error. Use one stream (or one polling thread) per consumer:
    /// concurrent pollers would split the messages between them.
    public func messages() -> AsyncThrowingStream<KafkaMessage, any Error> {
        let feeder = ConsumerFeeder(consumer: self)
        let lifetime = ConsumerFeeder.Lifetime(feeder: feeder)
        return AsyncThrowingStream(unfolding: { try await lifetime.feeder.next() })
    }

    /// Marks `message` processed: the group resumes after it once the offset is committed.
    /// A no-op without a group id, and for a partition this member no longer owns (its new owner re-reads it).
    public func storeOffset(_ message: KafkaMessage) throws(KafkaError) {
        try ensureOpen()
        guard groupId != nil else { return }
        let list = RDKafkaTopicPartitionList(capacity: 1)
        list.add(topic: message.topic, partition: message.partition, offset: message.offset + 1)
        let err = rd_kafka_offsets_store(client.handle, list.pointer)
        let partitionError = list.elements.first?.error ?? RD_KAFKA_RESP_ERR_NO_ERROR
        if err == RD_KAFKA_RESP_ERR_NO_ERROR && partitionError == RD_KAFKA_RESP_ERR_NO_ERROR { return }
        if err == RD_KAFKA_RESP_ERR__STATE || partitionError == RD_KAFKA_RESP_ERR__STATE {
            client.report(
                level: 6, facility: "OFFSET",
                message: "not storing offset of \(message.topic) [\(message.partition)]: partition no longer assigned")
            return
        }
        throw KafkaError(partitionError != RD_KAFKA_RESP_ERR_NO_ERROR ? partitionError : err)
    }

    /// Commits the stored offsets now and waits for the broker's answer. Blocks the calling thread.
    public func commit() throws(KafkaError) {
        try ensureOpen()
        guard groupId != nil else { throw KafkaError.invalidArgument("commit needs a group id") }
        let err = rd_kafka_commit(client.handle, nil, 0)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET else {
            throw KafkaError(err)
        }
    }

    /// Partitions currently assigned to this consumer.
    public var assignment: [KafkaTopicPartition] {
        client.context.assignment.withLock { $0 }
    }

    /// Waits until at least one partition is assigned. A group join completes only while the consumer
    /// is polled; when nobody is polling, this polls too (keeping any message for the next `poll`).
    public func waitForAssignment(timeout: Duration) async throws(KafkaError) {
        let deadline = ContinuousClock.now + timeout
        while true {
            try ensureOpen()
            if !assignment.isEmpty { return }
            try pollGate.withLockIfAvailable { stash throws(KafkaError) in
                if let message = try pollOnce(timeoutMilliseconds: 0) { stash.append(message) }
            }
            if !assignment.isEmpty { return }
            if ContinuousClock.now >= deadline { throw KafkaError.timedOut }
            do {
                try await Task.sleep(for: .milliseconds(10))
            } catch {
                throw KafkaError.cancelled
            }
        }
    }

    /// The partition's low and high watermarks, asked of the broker. Blocks the calling thread.
    public func watermarkOffsets(
        for partition: KafkaTopicPartition, timeoutMilliseconds: Int = 10_000
    ) throws(KafkaError) -> (low: Int64, high: Int64) {
        try ensureOpen()
        var low: Int64 = 0
        var high: Int64 = 0
        let err = rd_kafka_query_watermark_offsets(
            client.handle, partition.topic, partition.partition, &low, &high, Int32(clamping: timeoutMilliseconds))
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
        return (low, high)
    }

    /// True when this consumer's position on `partition` lies beyond the partition's high watermark as last
    /// reported by the broker: the log it was reading is gone (a broker that restarted empty numbers a new log
    /// from 0), so reading on would skip everything up to the old position. Uses only what this client already
    /// knows; asks the broker nothing.
    public func positionIsBeyondLog(_ partition: KafkaTopicPartition) -> Bool {
        guard (try? ensureOpen()) != nil, let list = rd_kafka_topic_partition_list_new(1) else { return false }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        guard rd_kafka_position(client.handle, list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return false }
        let position = list.pointee.elems[0].offset
        var low: Int64 = -1
        var high: Int64 = -1
        guard rd_kafka_get_watermark_offsets(client.handle, partition.topic, partition.partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR
        else { return false }
        return position >= 0 && high >= 0 && position > high
    }

    /// The group's committed offset of each partition (nil where nothing is committed yet), asked of the
    /// broker. Blocks the calling thread.
    public func committedOffsets(
        for partitions: [KafkaTopicPartition], timeoutMilliseconds: Int = 10_000
    ) throws(KafkaError) -> [Int64?] {
        try ensureOpen()
        guard !partitions.isEmpty else { return [] }
        guard let list = rd_kafka_topic_partition_list_new(Int32(partitions.count)) else { throw KafkaError.invalidArgument("allocation") }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for partition in partitions { rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition) }
        let err = rd_kafka_committed(client.handle, list, Int32(clamping: timeoutMilliseconds))
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err) }
        return (0..<Int(list.pointee.cnt)).map { index in
            let offset = list.pointee.elems[index].offset
            return offset >= 0 ? offset : nil
        }
    }

    /// How far the group is behind on each partition assigned here: the high watermark minus the committed
    /// offset (the low watermark where nothing is committed). Asked of the broker on a thread of its own.
    public func lag() async throws(KafkaError) -> [(partition: KafkaTopicPartition, messages: Int64)] {
        let partitions = assignment
        return try await runOnDedicatedThread(name: "kafka-lag") { () throws(KafkaError) -> [(partition: KafkaTopicPartition, messages: Int64)] in
            let committed = try self.committedOffsets(for: partitions)
            var lags: [(partition: KafkaTopicPartition, messages: Int64)] = []
            for (partition, offset) in zip(partitions, committed) {
                let marks = try self.watermarkOffsets(for: partition)
                lags.append((partition, max(0, marks.high - (offset ?? marks.low))))
            }
            return lags
        }
    }

    /// Commits stored offsets, leaves the group, stops every stream. Idempotent; blocks the caller
    /// while a poll in progress finishes and the group is left. The C handle is destroyed when the
    /// last reference goes away.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pollGate.withLock { stash in
            stash.removeAll()
            if groupId != nil {
                let err = rd_kafka_commit(client.handle, nil, 0)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                    client.report(level: 4, facility: "COMMIT", message: KafkaError(err).description)
                }
            }
            let err = rd_kafka_consumer_close(client.handle)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                client.report(level: 4, facility: "CLOSE", message: KafkaError(err).description)
            }
        }
        client.context.assignment.withLock { $0 = [] }
    }

    /// Stops the consumer the way a crash would: no commit, no LeaveGroup; the group notices only when
    /// the session times out. For tests of at-least-once delivery.
    func abandonWithoutClosing() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        client.destroyFlags.store(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE, ordering: .releasing)
        pollGate.withLock { $0.removeAll() }
        client.context.assignment.withLock { $0 = [] }
    }

    var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Gives back a message polled for a caller that went away, so the next poll returns it first.
    func unread(_ message: KafkaMessage) {
        pollGate.withLock { $0.insert(message, at: 0) }
    }

    private func ensureOpen() throws(KafkaError) {
        if isClosed { throw KafkaError.closed }
    }

    /// `message`, or nil while it is held back for a gap before it (`readsGapsAgain`, `OffsetContinuity`).
    private func inOrder(_ message: KafkaMessage, patience: Duration) -> KafkaMessage? {
        let partition = KafkaTopicPartition(topic: message.topic, partition: message.partition)
        let changes = client.context.assignmentChanges.load(ordering: .acquiring)
        switch continuity.withLock({ $0.admit(message.offset, of: partition, assignmentChanges: changes, patience: patience) }) {
        case .deliver:
            return message
        case .readOn(let missing):
            client.report(level: 4, facility: "GAP", message: "\(partition.topic) [\(partition.partition)]: offsets \(missing) never arrived; reading on")
            return message
        case .readAgain(let offset, let first):
            if first {
                client.report(level: 6, facility: "GAP", message: "\(partition.topic) [\(partition.partition)]: offset \(offset) skipped; reading from it again")
            }
            let list = RDKafkaTopicPartitionList(capacity: 1)
            list.add(topic: partition.topic, partition: partition.partition, offset: offset)
            if let failure = rd_kafka_seek_partitions(client.handle, list.pointer, 0) {
                defer { rd_kafka_error_destroy(failure) }
                client.report(level: 4, facility: "GAP", message: "seek back failed: \(KafkaError(rd_kafka_error_code(failure)))")
            }
            return nil
        }
    }

    /// One `rd_kafka_consumer_poll`; the caller holds `pollGate`.
    private func pollOnce(timeoutMilliseconds: Int) throws(KafkaError) -> KafkaMessage? {
        guard let raw = rd_kafka_consumer_poll(client.handle, Int32(clamping: timeoutMilliseconds)) else {
            return nil
        }
        defer { rd_kafka_message_destroy(raw) }
        let err = raw.pointee.err
        if err == RD_KAFKA_RESP_ERR_NO_ERROR {
            let message = KafkaMessage(copying: raw)
            return gapPatience.map { inOrder(message, patience: $0) } ?? message
        }
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
        if err == RD_KAFKA_RESP_ERR__FATAL {
            var errstr = [CChar](repeating: 0, count: 512)
            let underlying = rd_kafka_fatal_error(client.handle, &errstr, errstr.count)
            throw KafkaError(underlying, detail: cErrorText(errstr))
        }
        let detail = rd_kafka_message_errstr(raw).map { String(cString: $0) }
        client.report(level: 4, facility: "CONSUMER", message: KafkaError(err, detail: detail).description)
        return nil
    }
}

/// Feeds `KafkaConsumer.messages()`: a thread of its own polls only while a caller awaits the next
/// message, so nothing piles up between librdkafka and a slow handler.
final class ConsumerFeeder: Sendable {
    /// Owned by the stream; when the stream goes away the thread stops.
    final class Lifetime: Sendable {
        let feeder: ConsumerFeeder
        init(feeder: ConsumerFeeder) { self.feeder = feeder }
        deinit { feeder.stop() }
    }

    private let consumer: KafkaConsumer
    private let demand = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    /// The caller awaiting a message, if any; once the feed has ended, what the next caller gets. One lock for both, so
    /// a caller arriving as the thread ends is answered rather than left waiting for a thread that is gone.
    private let waiter = Mutex<Waiter>(.idle)

    private enum Waiter {
        case idle
        case waiting(CheckedContinuation<KafkaMessage?, any Error>)
        case ended(Result<KafkaMessage?, any Error>)
    }

    init(consumer: KafkaConsumer) {
        self.consumer = consumer
    }

    func next() async throws -> KafkaMessage? {
        if !started.exchange(true, ordering: .acquiringAndReleasing) {
            let thread = Thread { [self] in run() }
            thread.name = "kafka-consumer-stream"
            thread.start()
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ended = waiter.withLock { waiter -> Result<KafkaMessage?, any Error>? in
                    if case .ended(let result) = waiter {
                        waiter = .ended(.success(nil))
                        return result
                    }
                    waiter = .waiting(continuation)
                    return nil
                }
                if let ended { continuation.resume(with: ended) } else { demand.signal() }
            }
        } onCancel: {
            stop()
            end(with: .success(nil))
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        demand.signal()
    }

    private var shouldStop: Bool { stopped.load(ordering: .acquiring) || consumer.isClosed }

    private func run() {
        while !shouldStop {
            // Wake now and then to notice close() while nobody is asking for messages.
            guard demand.wait(timeout: .now() + .milliseconds(200)) == .success else { continue }
            while !shouldStop {
                do {
                    guard let message = try consumer.poll(timeoutMilliseconds: 100) else { continue }
                    if !deliver(message) { consumer.unread(message) }
                    break
                } catch where error.isClosed {
                    break
                } catch {
                    stop()
                    end(with: .failure(error))
                    return
                }
            }
        }
        end(with: .success(nil))
    }

    /// Hands `message` to the waiting caller; false if none waits (the caller went away).
    private func deliver(_ message: KafkaMessage) -> Bool {
        let continuation = waiter.withLock { waiter -> CheckedContinuation<KafkaMessage?, any Error>? in
            guard case .waiting(let continuation) = waiter else { return nil }
            waiter = .idle
            return continuation
        }
        continuation?.resume(returning: message)
        return continuation != nil
    }

    /// Ends the feed (the first end counts): the waiting caller, or else the next one, gets `result`; later ones nil.
    private func end(with result: Result<KafkaMessage?, any Error>) {
        let continuation = waiter.withLock { waiter -> CheckedContinuation<KafkaMessage?, any Error>? in
            switch waiter {
            case .ended: return nil
            case .idle:
                waiter = .ended(result)
                return nil
            case .waiting(let continuation):
                waiter = .ended(.success(nil))
                return continuation
            }
        }
        continuation?.resume(with: result)
    }
}

/// What a consumer that reads gaps again (`readsGapsAgain`) does with each message: per partition, the offset the next
/// message should carry and since when a later one has been held back. Forgotten whenever the assignment changes.
struct OffsetContinuity {
    enum Step: Equatable {
        case deliver
        /// Hold the message back and read the partition again from this offset (`first`: the gap was just found).
        case readAgain(from: Int64, first: Bool)
        /// The gap outlasted the patience: deliver the message; these offsets were never read.
        case readOn(missing: Range<Int64>)
    }

    private struct Expected {
        var next: Int64
        var gapSince: ContinuousClock.Instant?
    }

    private var assignmentChanges = 0
    private var partitions: [KafkaTopicPartition: Expected] = [:]

    /// A message at or before the expected offset (the first one, a redelivery, a seek back, a broker that starts its
    /// log again) is delivered and followed on; one past it is held back until the gap is read or `patience` passes.
    mutating func admit(_ offset: Int64, of partition: KafkaTopicPartition, assignmentChanges changes: Int, patience: Duration,
                        now: ContinuousClock.Instant = .now) -> Step {
        if changes != assignmentChanges { (assignmentChanges, partitions) = (changes, [:]) }
        guard let expected = partitions[partition], offset > expected.next else {
            partitions[partition] = Expected(next: offset + 1)
            return .deliver
        }
        let since = expected.gapSince ?? now
        guard now - since < patience else {
            partitions[partition] = Expected(next: offset + 1)
            return .readOn(missing: expected.next..<offset)
        }
        partitions[partition] = Expected(next: expected.next, gapSince: since)
        return .readAgain(from: expected.next, first: expected.gapSince == nil)
    }

    /// Where reading must resume on `partition` while a message is held back for a gap there; nil when none is.
    func heldBack(_ partition: KafkaTopicPartition) -> Int64? {
        partitions[partition].flatMap { $0.gapSince == nil ? nil : $0.next }
    }
}
