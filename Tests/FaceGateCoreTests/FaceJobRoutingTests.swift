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

    /// A matcher's answers to an enrollment's three steps: the probe (a sealed template and the duplicate distance), each
    /// shard's search (`others` on shard 0), the store.
    func enrollmentRequester(others: [FaceCandidate]) -> Requester {
        Requester { job in
            switch job.payload {
            case .enroll where job.probeOnly:
                var probed = FaceJobResult(outcome: .detected, faceCount: 1)
                probed.sealedTemplate = Data([1, 2, 3])
                probed.duplicateThreshold = 0.6
                return [probed]
            case .search: return [self.result(.match, others), self.result(.noMatchFace)]
            default: return [FaceJobResult(outcome: .enrolled, templateId: UUID())]
            }
        }
    }

    /// On a sharded gallery an enrollment is embedded once, by one shard; every shard's slice is searched with the sealed
    /// template; then that shard stores it, without a second duplicate check of its own slice.
    @Test func aShardedEnrollmentIsProbedSearchedEverywhereThenStoredByOneShard() async throws {
        let user = UUID()
        // The user's own face, and another user's beyond the duplicate distance, refuse nothing.
        let requester = enrollmentRequester(others: [FaceCandidate(userId: user, templateId: UUID(), distance: 0.1),
                                                     FaceCandidate(userId: UUID(), templateId: UUID(), distance: 0.7)])
        let answer = try await FaceJobRouting.answer(FaceJob(appId: app, .enroll(FaceJob.Enrollment(image: photo, userId: user))), messageId: "m1",
                                                     shards: 2, shard: 5, send: requester.send)
        #expect(answer.outcome == .enrolled)
        let jobs = requester.jobs
        #expect(jobs.count == 3)
        #expect(jobs[0].job.probeOnly && jobs[0].job.shard == 5 && jobs[0].replies == 1)
        guard case .search(let template, _) = jobs[1].job.payload else { Issue.record("no search: \(jobs[1].job.kind)"); return }
        #expect(template == Data([1, 2, 3]) && jobs[1].replies == 2)
        guard case .enroll(let stored) = jobs[2].job.payload else { Issue.record("no store"); return }
        #expect(!jobs[2].job.probeOnly && jobs[2].job.shard == 5 && jobs[2].replies == 1 && !stored.duplicateCheck)
    }

    /// Another user's face within the duplicate distance on any shard refuses the enrollment, and nothing is stored.
    @Test func aDuplicateOnAnyShardRefusesTheEnrollment() async throws {
        let other = UUID()
        let requester = enrollmentRequester(others: [FaceCandidate(userId: other, templateId: UUID(), distance: 0.4)])
        let answer = try await FaceJobRouting.answer(FaceJob(appId: app, .enroll(FaceJob.Enrollment(image: photo, userId: UUID()))), shards: 2,
                                                     send: requester.send)
        #expect(answer.outcome == .duplicateFace && answer.candidates.first?.userId == other)
        #expect(requester.jobs.count == 2, "probe and search, no store")
    }

    /// Without a duplicate check an enrollment goes straight to one shard; a progressive re-enrollment (another model)
    /// still goes to every shard.
    @Test func enrollmentsWithoutACheckGoToOneShardReEnrollmentsToEvery() async throws {
        let requester = Requester { _ in Array(repeating: FaceJobResult(outcome: .enrolled, templateId: UUID()), count: 3) }
        _ = try await FaceJobRouting.answer(FaceJob(appId: app, .enroll(FaceJob.Enrollment(image: photo, userId: UUID(), duplicateCheck: false))),
                                            shards: 3, shard: 2, send: requester.send)
        _ = try await FaceJobRouting.answer(FaceJob(appId: app, .enroll(FaceJob.Enrollment(image: photo, userId: UUID(), model: .sface2021dec))),
                                            shards: 3, send: requester.send)
        #expect(requester.jobs.map(\.replies) == [1, 3])
        #expect(requester.jobs[0].job.shard == 2 && !requester.jobs[0].job.probeOnly && requester.jobs[1].job.shard == nil)
    }
}
