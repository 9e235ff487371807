import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit
import Synchronization

/// The verifier's request–reply client towards the matchers: claims a partition of
/// `replies.ctid-verifier.v1` (retrying while the broker or PostgreSQL is away).
final class FaceRequester: Service {
    let name = "face-requester"
    private let runtime: ServiceRuntime
    private let producer: KafkaProducer
    private let timeout: Duration
    private let requester = Mutex<KafkaRequester?>(nil)
    private let starter = Mutex<Task<Void, Never>?>(nil)

    init(runtime: ServiceRuntime, producer: KafkaProducer, timeout: Duration) {
        self.runtime = runtime
        self.producer = producer
        self.timeout = timeout
    }

    var isReady: Bool { requester.withLock { $0 != nil } }

    func start() async throws {
        let task = Task { [self] in
            var attempt = 0
            while !Task.isCancelled {
                attempt += 1
                do {
                    try await runtime.ensureTopics()
                    let candidate = KafkaRequester(configuration: runtime.kafka, replyTopic: runtime.topics.replies(service: "ctid-verifier"),
                                                   lease: PostgresPartitionLease(database: runtime.database),
                                                   owner: runtime.configuration.instanceId, producer: producer)
                    try await candidate.start()
                    requester.withLock { $0 = candidate }
                    return
                } catch {
                    runtime.logger.error("reply partition not claimed yet", ["attempt": String(attempt), "error": "\(error)"])
                    try? await Task.sleep(for: .seconds(min(attempt, 5)))
                }
            }
        }
        starter.withLock { $0 = task }
    }

    /// Sends a face job and returns the first matcher's answer.
    func faceJob(_ job: FaceJob) async throws -> FaceJobResult {
        guard let requester = requester.withLock({ $0 }) else { throw FaceRequesterUnavailable() }
        let correlationId = UUID().uuidString.lowercased()
        let wallDeadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        let topic = runtime.topics.faceJobs
        let replies = try await requester.request(correlationId: correlationId, deadline: .now + timeout, expectedReplies: 1) { replyTo in
            let envelope = MessageEnvelope(type: job.kind.messageType, correlationId: correlationId, appId: job.appId.uuidString.lowercased(),
                                           deadline: wallDeadline, replyTo: ReplyTo(topic: replyTo.topic, partition: replyTo.partition), payload: job)
            return KafkaRecord(topic: topic, key: Array(correlationId.utf8), value: try envelope.encoded(),
                               headers: [KafkaHeader(key: MessageHeader.traceparent, value: Array(newTraceparent().utf8))])
        }
        return try MessageEnvelope<FaceJobResult>.decode(replies[0].value).payload
    }

    func shutdown() async {
        starter.withLock { $0 }?.cancel()
        await starter.withLock { $0 }?.value
        await requester.withLock { $0 }?.shutdown()
    }
}

struct FaceRequesterUnavailable: Error, CustomStringConvertible {
    var description: String { "the verifier's reply partition is not claimed yet" }
}
