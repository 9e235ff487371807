import FaceGateCore
import Foundation
import Synchronization
import Testing

/// How a face job reaches a sharded gallery (`FaceJobRouting`), over a scripted requester: which jobs go to one shard,
/// how an identify is probed once and searched everywhere, and which probe answers end it.
@Suite struct FaceJobRoutingTests {
    /// Answers each job from a script, keeping what was sent and how many answers it asked for.
    final class Requester: Sendable {
        let sent = Mutex<[(job: FaceJob, replies: Int)]>([])
        let answers: @Sendable (FaceJob) -> [FaceJobResult]
        init(_ answers: @escaping @Sendable (FaceJob) -> [FaceJobResult]) { self.answers = answers }

        var send: FaceJobRouting.Send {
            { job, _, replies in
                self.sent.withLock { $0.append((job, replies)) }
                return Array(self.answers(job).prefix(replies))
            }
        }
        var jobs: [(job: FaceJob, replies: Int)] { sent.withLock { $0 } }
    }

    let app = UUID()
    let photo = Data([0xFF, 0xD8, 0xFF])
    let rule = MatchRule(threshold: 1.0, margin: 0.05)

    func result(_ outcome: FaceOutcome, _ candidates: [FaceCandidate] = []) -> FaceJobResult {
        var result = FaceJobResult(outcome: outcome, candidates: candidates)
        result.rule = rule
        return result
    }

    @Test func jobsThatNeedNoSliceGoToOneShard() async throws {
        let requester = Requester { _ in [FaceJobResult(outcome: .detected)] }
        for payload: FaceJob.Payload in [.verify(image: photo, against: .user(UUID())), .detect(image: photo), .template(image: photo),
                                         .liveness(FaceJob.Burst(frames: [photo], actions: [.blink]))] {
            _ = try await FaceJobRouting.answer(FaceJob(appId: app, payload), shards: 4, shard: 7, send: requester.send)
        }
        #expect(requester.jobs.map(\.replies) == [1, 1, 1, 1])
        #expect(requester.jobs.allSatisfy { $0.job.shard == 7 && !$0.job.probeOnly })
    }

    @Test func anIdentifyOnOneShardIsOneJob() async throws {
        let requester = Requester { _ in [self.result(.match, [FaceCandidate(userId: UUID(), templateId: UUID(), distance: 0.5)])] }
        let answer = try await FaceJobRouting.answer(FaceJob(appId: app, .identify(image: photo, topK: 5)), shards: 1, send: requester.send)
        #expect(answer.outcome == .match)
        #expect(requester.jobs.count == 1 && requester.jobs[0].replies == 1 && requester.jobs[0].job.shard == nil && !requester.jobs[0].job.probeOnly)
    }

    @Test func aShardedIdentifyIsProbedOnceThenSearchedOnEveryShardWithTheTemplate() async throws {
        let (near, far) = (UUID(), UUID())
        let requester = Requester { job in
            switch job.payload {
            case .identify:
                var probed = FaceJobResult(outcome: .detected, faceCount: 2)
                probed.sealedTemplate = Data([1, 2, 3])
                probed.subject = FaceRegion(x: 1, y: 2, width: 30, height: 40)
                return [probed]
            case .search(let template, let topK):
                #expect(template == Data([1, 2, 3]) && topK == 5)
                return [self.result(.noMatchFace, [FaceCandidate(userId: far, templateId: UUID(), distance: 1.2)]),
                        self.result(.match, [FaceCandidate(userId: near, templateId: UUID(), distance: 0.6)])]
            default:
                return []
            }
        }
        let job = FaceJob(appId: app, threshold: 1.0, boundUsers: [UUID()], .identify(image: photo, topK: 5))
        let answer = try await FaceJobRouting.answer(job, shards: 2, shard: 3, send: requester.send)
        let sent = requester.jobs
        #expect(sent.count == 2)
        #expect(sent[0].job.probeOnly && sent[0].job.shard == 3 && sent[0].replies == 1 && sent[0].job.boundUsers == job.boundUsers)
        #expect(sent[1].job.kind == .search && sent[1].job.shard == nil && sent[1].replies == 2 && sent[1].job.threshold == 1.0)
        // The shards' answers merged and decided again; what the probe saw is kept.
        #expect(answer.outcome == .match && answer.candidates.map(\.userId) == [near, far])
        #expect(answer.faceCount == 2 && answer.subject == FaceRegion(x: 1, y: 2, width: 30, height: 40))
    }

    @Test func aRefusalOrABoundMatchEndsTheProbeAndASearchDecisionIsRefused() async throws {
        for (probed, searched) in [(FaceJobResult(outcome: .noFace), false), (FaceJobResult(outcome: .spoofDetected), false)] {
            let requester = Requester { _ in [probed] }
            let answer = try await FaceJobRouting.answer(FaceJob(appId: app, .identify(image: photo, topK: 5)), shards: 2, send: requester.send)
            #expect(answer.outcome == probed.outcome && (requester.jobs.count == 2) == searched)
        }
        var bound = result(.match, [FaceCandidate(userId: UUID(), templateId: UUID(), distance: 0.4)])
        bound.boundMatch = true
        let boundMatch = bound
        let boundRequester = Requester { _ in [boundMatch] }
        let ended = try await FaceJobRouting.answer(FaceJob(appId: app, .identify(image: photo, topK: 5)), shards: 2, send: boundRequester.send)
        #expect(ended.boundMatch == true)
        #expect(boundRequester.jobs.count == 1)
        // A matcher that predates probes searched its own slice: its decision is not the gallery's.
        let older = Requester { _ in [self.result(.noMatchFace)] }
        await #expect(throws: ProbeAnsweredAsSearch.self) {
            try await FaceJobRouting.answer(FaceJob(appId: app, .identify(image: photo, topK: 5)), shards: 2, send: older.send)
        }
    }

    @Test func enrollmentsGoToEveryShard() async throws {
        let requester = Requester { _ in Array(repeating: FaceJobResult(outcome: .enrolled), count: 3) }
        _ = try await FaceJobRouting.answer(FaceJob(appId: app, .enroll(FaceJob.Enrollment(image: photo, userId: UUID()))), shards: 3,
                                            send: requester.send)
        #expect(requester.jobs.count == 1 && requester.jobs[0].replies == 3 && requester.jobs[0].job.shard == nil)
    }
}
