import FaceGateCore
import Foundation

extension FaceJobRequester {
    /// A face job answered once, each photo embedded by one matcher, however the gallery is sharded (`FaceJobRouting`).
    public func faceJob(_ job: FaceJob, messageId: String? = nil, shards: Int) async throws -> FaceJobResult {
        try await FaceJobRouting.answer(job, messageId: messageId, shards: shards) { job, messageId, replies in
            try await faceJob(job, messageId: messageId, expectedReplies: replies)
        }
    }
}
