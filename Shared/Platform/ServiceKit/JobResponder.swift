import FaceGateCore
import Foundation
import KafkaClient

/// The worker side of request–reply, written once for every job topic: decodes the envelope (a broken one, or one whose
/// `type` is not the job its payload names, is rejected to the dead letters), refuses a job whose `replyTo` is not a
/// platform reply topic, answers a job past
/// its deadline without doing it, runs the work in the job's app scope (`Tenant`), and replies on the
/// requester's partition with the job's trace context. A fault the work throws is retried by the consumer.
public struct JobResponder<Job: JobMessage>: Sendable {
    public typealias Reply = Job.Reply
    /// What a job is called in log lines and refusals ("face job").
    let name: String
    let producer: KafkaProducer
    let replyTopics: Topics
    let deadlineMisses: Counter
    let logger: Logger
    let app: @Sendable (Job) -> UUID
    let late: (@Sendable (Job) -> Reply)?
    /// For jobs carried out late (`late` nil): how long past its deadline a job is still taken. Past it the job is refused
    /// to the dead letters as expired: a replayed message that a restarted process, or another replica, has never seen is
    /// then refused by its age, with no record of it kept anywhere.
    let expiresAfter: Duration
    let logFields: @Sendable (Job) -> [String: String]
    let retryUnsentReply: Bool
    /// False for a job another worker is named to take (a sharded matcher's single-shard jobs): it is completed unanswered.
    let takes: @Sendable (Job) -> Bool
    let work: @Sendable (MessageEnvelope<Job>) async throws -> Reply

    /// - Parameters:
    ///   - app: the app the job is for; the work runs in its scope.
    ///   - late: the answer to a job taken after its deadline; nil runs such a job anyway, up to `expiresAfter` past it.
    ///   - retryUnsentReply: whether a reply the broker did not take makes the consumer try the job again
    ///     (false when the job's effects are already visible another way).
    public init(_ name: String, runtime: ServiceRuntime, producer: KafkaProducer, app: @escaping @Sendable (Job) -> UUID, late: (@Sendable (Job) -> Reply)?,
                expiresAfter: Duration = .seconds(60), retryUnsentReply: Bool = true,
                logFields: @escaping @Sendable (Job) -> [String: String] = { _ in [:] },
                takes: @escaping @Sendable (Job) -> Bool = { _ in true },
                work: @escaping @Sendable (MessageEnvelope<Job>) async throws -> Reply) {
        self.name = name
        self.producer = producer
        replyTopics = runtime.topics
        deadlineMisses = runtime.deadlineMisses
        logger = runtime.logger
        self.app = app
        self.late = late
        self.expiresAfter = expiresAfter
        self.logFields = logFields
        self.retryUnsentReply = retryUnsentReply
        self.takes = takes
        self.work = work
    }

    public func handle(_ message: KafkaMessage) async -> JobDisposition {
        let envelope: MessageEnvelope<Job>
        do { envelope = try MessageEnvelope<Job>.decode(message.value) } catch { return .reject(error.description) }
        let job = envelope.payload
        guard envelope.type == job.messageType else {
            return .reject("\(name) of type \(envelope.type) carries a \(job.messageType) payload")
        }
        guard let replyTo = envelope.replyTo, replyTopics.isReplyTopic(replyTo.topic) else {
            return .reject("\(name) without a platform reply topic in replyTo")
        }
        guard takes(job) else { return .completed }
        let reply: Reply
        if late == nil, envelope.isExpired(now: Date().addingTimeInterval(-expiresAfter.seconds)) {
            deadlineMisses.increment(["topic": message.topic, "side": "worker"])
            return .reject("expired: \(name) taken more than \(Int(expiresAfter.seconds)) s past its deadline")
        }
        if let late, envelope.isExpired() {
            reply = late(job)
            deadlineMisses.increment(["topic": message.topic, "side": "worker"])
        } else {
            do {
                reply = try await Tenant.run(app: app(job)) { try await work(envelope) }
            } catch {
                logger.warning("\(name) failed", logFields(job).merging(["error": "\(error)", "job.id": envelope.id]) { _, new in new })
                return .retry("\(error)")
            }
        }
        do {
            let answer = MessageEnvelope(type: job.replyType, correlationId: envelope.correlationId, appId: envelope.appId,
                                         deadline: envelope.deadline, replyTo: nil, payload: reply)
            _ = try await producer.send(replyRecord(to: ReplyAddress(topic: replyTo.topic, partition: replyTo.partition),
                                                    correlationId: envelope.correlationId, value: try answer.encoded(), headers: [TraceContext.header]))
        } catch {
            if retryUnsentReply { return .retry("reply not sent: \(error)") }
            logger.warning("\(name) reply not sent", logFields(job).merging(["error": "\(error)", "job.id": envelope.id]) { _, new in new })
        }
        return .completed
    }
}
