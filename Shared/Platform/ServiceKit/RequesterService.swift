import FaceGateCore
import Foundation
import KafkaClient
import PlatformRecords
import Synchronization

/// A service's request–reply client: claims its own reply partition (retrying while the broker or
/// PostgreSQL is away) and is ready only once it has one. Requests before then fail at once, so callers
/// answer SERVICE_UNAVAILABLE instead of waiting.
public final class RequesterService: Service {
    public let name = "kafka-requester"
    private let runtime: ServiceRuntime
    private let producer: KafkaProducer
    private let service: String
    private let timeout: Duration
    private let requester = Mutex<KafkaRequester?>(nil)
    private let doorbell: DoorbellRinger

    /// `service` names the reply topic (`replies.<service>.v1`); `timeout` bounds every request.
    public init(runtime: ServiceRuntime, producer: KafkaProducer, service: String, timeout: Duration) {
        self.runtime = runtime
        self.producer = producer
        self.service = service
        self.timeout = timeout
        doorbell = DoorbellRinger(runtime: runtime)
    }

    public var isReady: Bool { requester.withLock { $0 != nil } }

    private var pauseWhenIdle: Duration? {
        let milliseconds = runtime.configuration.kafkaReplyPauseMilliseconds
        return milliseconds > 0 ? .milliseconds(milliseconds) : nil
    }

    /// Ready at once (requests fail until the partition is claimed); claims it, retrying, then holds it until the shutdown.
    public func run(_ context: ServiceContext) async throws {
        context.ready()
        _ = try await context.cancellingOnShutdown { [self] in
            var attempt = 0
            while requester.withLock({ $0 }) == nil {
                attempt += 1
                do {
                    try await runtime.ensureTopics()
                    var replies = runtime.kafka
                    replies.consumer.fetchWait = .milliseconds(runtime.configuration.kafkaReplyFetchWaitMilliseconds)
                    let candidate = KafkaRequester(configuration: replies, replyTopic: runtime.topics.replies(service: service),
                                                   lease: PostgresPartitionLease(database: runtime.database),
                                                   owner: runtime.configuration.instanceId, producer: producer,
                                                   pauseWhenIdle: pauseWhenIdle, delivered: { [doorbell] in doorbell.delivered($0) })
                    try await candidate.start()
                    requester.withLock { $0 = candidate }
                    runtime.logger.info("reply partition claimed", ["kafka.partition": String(candidate.replyAddress.partition)])
                } catch {
                    runtime.logger.error("broker or database not reachable; requests fail until it is",
                                         ["attempt": String(attempt), "error": "\(error)"])
                    try await Task.sleep(for: .seconds(min(attempt, 5)))
                }
            }
        }
        await context.shutdownRequested()
        await requester.withLock { $0 }?.shutdown()
    }

    /// Sends `job` in a versioned envelope to its topic and waits, within the timeout, for `expectedReplies` answers
    /// (one per shard when the workers are sharded) of its reply type. The record's key is the correlation id unless
    /// `key` orders it with others (a kiosk session's commands). `messageId` is the envelope's deduplication key: a
    /// fresh one unless the caller repeats a job on purpose (a client's retry).
    public func send<Job: JobMessage>(_ job: Job, appId: UUID, key: String? = nil, messageId: String? = nil,
                                      expectedReplies: Int = 1) async throws -> [Job.Reply] {
        let topic = Job.topic(in: runtime.topics)
        guard let requester = requester.withLock({ $0 }) else { throw RequesterUnavailable() }
        let correlationId = UUID().wire
        let wallDeadline = Date().addingTimeInterval(timeout.seconds)
        // Only a reply signed by the service that consumes `topic`, sealed to this one and of the job's reply type counts:
        // any other answer is dropped, and the genuine one is still waited for.
        let messages = runtime.messages
        let responder = runtime.topics.responder(of: topic) ?? ""
        let replyType = job.replyType
        let logger = runtime.logger
        do {
            return try await requester.request(correlationId: correlationId, deadline: .now + timeout, expectedReplies: expectedReplies,
                                               vet: { reply -> Job.Reply? in
                                                   guard let opened = try? messages.authenticate(reply, from: responder)
                                                       .flatMap({ _ in messages.open(reply) }).get()
                                                   else { return nil }
                                                   do {
                                                       return try MessageEnvelope<Job.Reply>.decode(opened, expectingType: replyType).payload
                                                   } catch {
                                                       messages.countRejected(reply, reason: "undecodable")
                                                       logger.warning("reply refused: not a \(replyType)", ["error": "\(error)", "kafka.offset": String(reply.offset)])
                                                       return nil
                                                   }
                                               }) { replyTo in
                let envelope = MessageEnvelope(type: job.messageType, id: messageId ?? UUID().wire, correlationId: correlationId, appId: appId.wire, deadline: wallDeadline,
                                               replyTo: ReplyTo(topic: replyTo.topic, partition: replyTo.partition), payload: job)
                return KafkaRecord(topic: topic, key: Array((key ?? correlationId).utf8), value: try envelope.encoded(),
                                   headers: [TraceContext.header])
            }
        } catch let error as KafkaError where error.isTimeout {
            runtime.deadlineMisses.increment(["topic": topic, "side": "requester"])
            throw error
        }
    }

    /// A face job on `face.jobs.v1`: the matchers' answers, one per shard.
    public func faceJob(_ job: FaceJob, messageId: String?, expectedReplies: Int) async throws -> [FaceJobResult] {
        try await send(job, appId: job.appId, messageId: messageId, expectedReplies: expectedReplies)
    }
}

/// Face jobs for the matchers (`RequesterService` over the broker; a scripted twin in a worker's tests).
public protocol FaceJobRequester: Sendable {
    /// The matchers' answers to `job`, one per shard (`expectedReplies`).
    func faceJob(_ job: FaceJob, messageId: String?, expectedReplies: Int) async throws -> [FaceJobResult]
}

extension FaceJobRequester {
    /// One matcher's answer, under a fresh message id.
    public func faceJob(_ job: FaceJob) async throws -> FaceJobResult {
        try await faceJob(job, messageId: nil, expectedReplies: 1)[0]
    }
}

extension RequesterService: FaceJobRequester {}

public struct RequesterUnavailable: Error, CustomStringConvertible {
    public var description: String { "the reply partition is not claimed yet" }
}
