import Crypto
import FaceGateCore
import Foundation
import KafkaClient
import PostgresClient
import Synchronization

/// What a job handler tells the consumer loop.
public enum JobDisposition: Sendable {
    /// Done (answered, effects committed): the offset may be stored.
    case completed
    /// A fault that may pass (database or broker hiccup): try again, then dead-letter.
    case retry(String)
    /// The message can never succeed (broken envelope): dead-letter now.
    case reject(String)
}

/// Where a job consumer's messages come from and its progress goes (`KafkaConsumer`; an in-memory twin in tests).
public protocol JobSource: Sendable {
    func subscribe(_ topics: [String]) throws
    /// The messages as they arrive; the stream ends when the source is closed.
    func messages() -> AsyncThrowingStream<KafkaMessage, any Error>
    func storeOffset(_ message: KafkaMessage) throws
    func lag() async throws -> [(partition: KafkaTopicPartition, messages: Int64)]
    func waitForAssignment(timeout: Duration) async throws
    func close()
}

extension KafkaConsumer: JobSource {}

/// Where records are sent (`KafkaProducer`): a job consumer's dead letters.
public protocol RecordSink: Sendable {
    func send(_ record: KafkaRecord) async throws -> (partition: Int32, offset: Int64)
}

extension KafkaProducer: RecordSink {}

/// A consumer-group member that runs a handler per message with bounded concurrency and at-least-once
/// delivery: a partition's offset is stored only up to the oldest message whose handling finished, so
/// a crash re-delivers, never skips. A message that keeps failing goes to `<topic>.dlq` after
/// `maxAttempts` and the partition moves on. On shutdown it stops fetching, lets in-flight jobs finish,
/// commits, and leaves the group.
public final class JobConsumer: Service {
    public let name: String
    private let consumer: any JobSource
    private let producer: any RecordSink
    private let topic: String
    private let groupId: String
    private let concurrency: Int
    private let maxAttempts: Int
    private let logger: Logger
    private let handler: @Sendable (KafkaMessage) async -> JobDisposition
    private let messages: MessageAuthenticator
    private let lag: Gauge
    private let tracker = OffsetTracker()
    private let processed: Counter
    private let deadLetters: Counter
    private let retries: Counter
    private let duration: Histogram
    private let running = Atomic<Bool>(false)
    /// With `FACEGATE_KAFKA_JOB_PAUSE_MS`: the idle pause and the doorbell's listener.
    public let idle: IdleFetching?
    private let doorbell: PostgresListener?

    /// A member of `groupId` on the broker.
    public convenience init(name: String, runtime: ServiceRuntime, topic: String, groupId: String, producer: KafkaProducer,
                            concurrency: Int, maxAttempts: Int = 3, handler: @escaping @Sendable (KafkaMessage) async -> JobDisposition) throws {
        var configuration = runtime.kafka
        configuration.consumer.maxPollInterval = .seconds(300)
        // A member that dies is noticed within seconds, so its partitions (and unfinished jobs) move on.
        configuration.consumer.sessionTimeout = .seconds(10)
        configuration.consumer.heartbeatInterval = .seconds(1)
        let source = try KafkaConsumer(configuration: configuration, groupId: groupId, autoOffsetReset: .beginning,
                                       readsGapsAgain: KafkaConsumer.defaultGapPatience)
        let pause = runtime.configuration.kafkaJobPauseMilliseconds
        let idle = pause > 0 ? IdleFetching(source: source, pauseAfter: .milliseconds(pause), logger: runtime.logger.with(["consumer": name]),
                                            metrics: runtime.metrics) : nil
        let doorbell = idle.map { idle in
            PostgresListener(configuration: runtime.database.configuration, channels: [JobDoorbell.channel]) { idle.heard($0) }
        }
        self.init(name: name, runtime: runtime, topic: topic, groupId: groupId, source: source, producer: producer,
                  concurrency: concurrency, maxAttempts: maxAttempts, idle: idle, doorbell: doorbell, handler: handler)
    }

    /// `idle` pauses `source` while no job comes; `doorbell` feeds it what it hears (it is started and stopped with the loop).
    public init(name: String, runtime: ServiceRuntime, topic: String, groupId: String, source: any JobSource, producer: any RecordSink,
                concurrency: Int, maxAttempts: Int = 3, idle: IdleFetching? = nil, doorbell: PostgresListener? = nil,
                handler: @escaping @Sendable (KafkaMessage) async -> JobDisposition) {
        self.idle = idle
        self.doorbell = doorbell
        self.name = name
        consumer = source
        self.producer = producer
        self.topic = topic
        self.groupId = groupId
        self.concurrency = max(1, concurrency)
        self.maxAttempts = maxAttempts
        self.logger = runtime.logger.with(["consumer": name])
        self.handler = handler
        messages = runtime.messages
        processed = runtime.metrics.counter("facegate_jobs_total", help: "Jobs handled, by topic and disposition")
        deadLetters = runtime.metrics.counter("facegate_dead_letters_total",
                                              help: "Messages moved to the dead-letter topic, by topic and cause (refused, rejected, retries_exhausted)")
        retries = runtime.metrics.counter("facegate_job_retries_total", help: "Jobs tried again after a passing fault, by topic")
        duration = runtime.metrics.histogram("facegate_job_seconds", help: "Job handling time, by topic")
        lag = runtime.metrics.gauge("facegate_consumer_lag", help: "Messages not yet handled on the partitions this member holds, by group, topic and partition")
        runtime.readiness.add("consumer:\(name)") { [weak self] in self?.running.load(ordering: .relaxed) ?? false }
    }

    /// Consumes until the shutdown: then it stops fetching, lets the jobs in flight finish (they are not cancelled: a
    /// cancelled job would fail and be retried or dead-lettered), stores their offsets and leaves the group. The stream
    /// ending any other way ends `run` with an error, which stops the process.
    public func run(_ context: ServiceContext) async throws {
        try consumer.subscribe([topic])
        running.store(true, ordering: .relaxed)
        defer { running.store(false, ordering: .relaxed) }
        context.ready()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in await watchLag(every: .seconds(15)) }
            if let idle {
                doorbell?.start()
                idle.start()
            }
            defer {
                idle?.stop()
                doorbell?.stop()
            }
            group.addTask { [consumer] in
                await context.shutdownRequested()
                consumer.close()
            }
            defer { group.cancelAll() }
            try await consume()
        }
        guard context.isShuttingDown else { throw JobLoopEnded() }
    }

    struct JobLoopEnded: Error, CustomStringConvertible {
        var description: String { "the job loop ended" }
    }

    /// Publishes the group's lag on this member's partitions (what an autoscaler scales on); partitions
    /// that moved to another member drop to 0 here, their new holder reports them.
    private func watchLag(every interval: Duration) async {
        var reported: Set<String> = []
        while !Task.isCancelled {
            if let lags = try? await consumer.lag() {
                var current: Set<String> = []
                for (partition, messages) in lags {
                    let key = String(partition.partition)
                    current.insert(key)
                    lag.set(Double(messages), ["group": groupId, "topic": partition.topic, "partition": key])
                }
                for gone in reported.subtracting(current) { lag.set(0, ["group": groupId, "topic": topic, "partition": gone]) }
                reported = current
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Waits until the group has given this member partitions (tests; joins take seconds).
    public func waitUntilAssigned(timeout: Duration = .seconds(30)) async throws {
        try await consumer.waitForAssignment(timeout: timeout)
    }

    /// Handles the messages as they come, at most `concurrency` at once, until the stream ends; then waits for the jobs
    /// in flight.
    private func consume() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0
            do {
                for try await message in consumer.messages() {
                    if inFlight >= concurrency {
                        try await group.next()
                        inFlight -= 1
                    }
                    tracker.begin(message)
                    idle?.began()
                    inFlight += 1
                    group.addTask { [self] in await process(message) }
                }
            } catch {
                logger.error("consumer stopped", ["error": "\(error)"])
                try await group.waitForAll()
                throw error
            }
            try await group.waitForAll()
        }
    }

    private func process(_ message: KafkaMessage) async {
        let started = ContinuousClock.now
        var attempt = 0
        var outcome = "completed"
        // A message no service signed, signed by one not allowed on this topic, or replayed is never
        // handled: it goes to the dead-letter topic (without its payload) and counts as refused.
        // A job's value is sealed to this service: the handler sees it opened, dead letters only the digest of
        // what was received.
        var opened = message
        switch messages.authenticate(message).flatMap({ _ in messages.open(message) }) {
        case .success(let value):
            opened.value = value
        case .failure(let rejection):
            outcome = "refused"
            await deadLetter(message, cause: "refused", reason: "message refused: \(rejection)", attempts: 0)
        }
        while outcome == "completed" {
            attempt += 1
            // The job runs in its sender's trace (a new one when the header is missing or malformed).
            let trace = message.header("traceparent").flatMap { TraceContext(traceparent: String(decoding: $0, as: UTF8.self)) } ?? .random()
            switch await TraceContext.$current.withValue(trace, operation: { await handler(opened) }) {
            case .completed:
                break
            case .retry(let reason) where attempt < maxAttempts:
                logger.warning("job failed, retrying", ["attempt": String(attempt), "error": reason, "kafka.offset": String(message.offset)])
                retries.increment(["topic": topic])
                try? await Task.sleep(for: .milliseconds(200 * attempt))
                continue
            case .retry(let reason):
                outcome = "dead_lettered"
                await deadLetter(message, cause: "retries_exhausted", reason: reason, attempts: attempt)
            case .reject(let reason):
                outcome = "dead_lettered"
                await deadLetter(message, cause: "rejected", reason: reason, attempts: attempt)
            }
            break
        }
        processed.increment(["topic": topic, "disposition": outcome])
        duration.observe(ContinuousClock.now - started, ["topic": topic])
        if let storable = tracker.finish(message) {
            do { try consumer.storeOffset(storable) } catch { logger.warning("offset not stored", ["error": "\(error)"]) }
        }
        idle?.finished()
    }

    private func deadLetter(_ message: KafkaMessage, cause: String, reason: String, attempts: Int) async {
        logger.error("job dead-lettered", ["error": reason, "kafka.topic": message.topic, "kafka.offset": String(message.offset)])
        deadLetters.increment(["topic": topic, "cause": cause])
        // Keep trying: moving on without the dead letter would lose the message.
        while true {
            do {
                let digest = "sha256:" + SHA256.hash(message.value).map { String(format: "%02x", $0) }.joined()
                _ = try await producer.send(deadLetterRecord(for: message, error: reason, attempts: attempts, valueDigest: digest))
                return
            } catch {
                logger.error("dead letter not written yet", ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

}

/// Per partition, the offsets in flight; returns the message whose offset may be stored once every
/// earlier message of that partition has finished.
final class OffsetTracker: Sendable {
    private struct PartitionState {
        var inFlight: [Int64] = []
        var finished: [Int64: KafkaMessage] = [:]
    }
    private let state = Mutex<[KafkaTopicPartition: PartitionState]>([:])

    func begin(_ message: KafkaMessage) {
        let key = KafkaTopicPartition(topic: message.topic, partition: message.partition)
        state.withLock { $0[key, default: PartitionState()].inFlight.append(message.offset) }
    }

    func finish(_ message: KafkaMessage) -> KafkaMessage? {
        let key = KafkaTopicPartition(topic: message.topic, partition: message.partition)
        return state.withLock { all -> KafkaMessage? in
            guard var partition = all[key] else { return nil }
            partition.finished[message.offset] = message
            var storable: KafkaMessage?
            while let first = partition.inFlight.first, let done = partition.finished.removeValue(forKey: first) {
                partition.inFlight.removeFirst()
                storable = done
            }
            all[key] = partition
            return storable
        }
    }
}
