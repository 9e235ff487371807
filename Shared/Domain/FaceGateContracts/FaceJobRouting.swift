import Foundation

/// How a face job is answered once, however many shards the gallery is cut into (`FACEGATE_MATCHER_SHARDS`), with each
/// photo embedded by one matcher:
/// - a job that needs no gallery slice (a verify, a detection, a reference template, a burst that identifies no one)
///   goes to one shard, drawn at random;
/// - an identify, or a burst that identifies, has its probe embedded by one shard, which answers it as a template sealed
///   with the platform key; every shard then searches its slice with that template (a `search` job: the template, not the
///   photo) and their answers are merged;
/// - an enrollment has its face embedded by one shard, which answers it as a sealed template (after the quality gate and
///   the user's limit); every shard searches its slice for another user's face with it (`DUPLICATE_FACE`), and only then
///   is it stored, by that shard (it reaches the shard that keeps it by the gallery-change broadcast). Without a
///   duplicate check it goes to that one shard at once. A progressive re-enrollment (a model the app's gallery is not
///   searched with yet) and a re-embedding go to every shard, merged.
public enum FaceJobRouting {
    /// Sends a job and waits for `replies` answers: the requester's part.
    public typealias Send = @Sendable (_ job: FaceJob, _ messageId: String?, _ replies: Int) async throws -> [FaceJobResult]

    public static func answer(_ job: FaceJob, messageId: String? = nil, shards: Int, shard: Int = Int.random(in: 0..<(1 << 30)),
                              send: Send) async throws -> FaceJobResult {
        var single = job
        // Any number: a matcher takes it when it is its index modulo the shard count.
        single.shard = shard
        switch job.payload {
        case .verify, .detect, .template, .liveness where !job.identifies:
            return try await send(single, messageId, 1)[0]
        case .identify, .liveness:
            guard shards > 1 else { return try await send(job, messageId, 1)[0] }
            single.probeOnly = true
            let probed = try await send(single, nil, 1)[0]
            guard probed.outcome == .detected, let template = probed.sealedTemplate else {
                // A refusal (no face, no clear subject, a spoof) or a bound user's 1:1 match ends it there. A decision on a
                // search is no probe's to make: a matcher that answers one ignored `probeOnly` and searched its slice alone.
                if probed.boundMatch != true, [.match, .noMatchFace, .ambiguousMatch].contains(probed.outcome) { throw ProbeAnsweredAsSearch() }
                return probed
            }
            let search = FaceJob(appId: job.appId, threshold: job.threshold, margin: job.margin, .search(template: template, topK: job.topK))
            var result = FaceJobResult.merged(try await send(search, nil, shards), for: search)
            (result.faceCount, result.quality, result.subject) = (probed.faceCount, probed.quality, probed.subject)
            (result.liveness, result.bestFrameIndex) = (probed.liveness, probed.bestFrameIndex)
            result.timings.merge(probed.timings) { search, _ in search }
            return result
        case .enroll(var enrollment) where shards > 1 && enrollment.model == nil:
            // Embedded once on one shard, every shard's slice searched for another user's face, then stored by that shard.
            if enrollment.duplicateCheck {
                single.probeOnly = true
                let probed = try await send(single, nil, 1)[0]
                // Refused (no face, low quality, the limit), or stored by a matcher that predates enrollment probes.
                guard probed.outcome == .detected, let template = probed.sealedTemplate, let threshold = probed.duplicateThreshold else { return probed }
                let search = FaceJob(appId: job.appId, threshold: job.threshold, margin: job.margin, .search(template: template, topK: 10))
                let found = FaceJobResult.merged(try await send(search, nil, shards), for: search)
                if let duplicate = found.candidates.first(where: { $0.userId != enrollment.userId && $0.distance <= threshold }) {
                    var refused = FaceJobResult(outcome: .duplicateFace, message: "the face is already enrolled for another user",
                                                candidates: [duplicate], faceCount: probed.faceCount, quality: probed.quality)
                    refused.subject = probed.subject
                    return refused
                }
                enrollment.duplicateCheck = false
                single.probeOnly = false
            }
            single.payload = .enroll(enrollment)
            return try await send(single, messageId, 1)[0]
        case .enroll, .reembed, .search:
            return FaceJobResult.merged(try await send(job, messageId, shards), for: job)
        }
    }
}

/// A shard answered a probe with a search of its own slice: it predates `probeOnly` (upgrade the matchers before the
/// services that send face jobs). Its answer is not used.
public struct ProbeAnsweredAsSearch: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "a matcher answered a probe with a search of its own shard: upgrade the matchers first" }
}
