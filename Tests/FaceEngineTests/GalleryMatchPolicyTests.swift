import Foundation
import Testing

@testable import FaceEngine

@Suite struct GalleryMatchPolicyTests {
    let alice = UUID(), bob = UUID()

    func match(_ user: UUID, _ distance: Float) -> GalleryMatch {
        GalleryMatch(templateId: UUID(), userId: user, distance: distance)
    }

    @Test func noCandidateIsNoMatch() {
        #expect(MatchPolicy().decide([]) == .noMatch(best: nil))
    }

    @Test func bestBeyondThresholdIsNoMatch() {
        let best = match(alice, 0.55)
        #expect(MatchPolicy().decide([best, match(bob, 0.56)]) == .noMatch(best: best))
        #expect(MatchPolicy(threshold: 0.6).decide([best]) == .match(best))
        let atThreshold = match(alice, 0.5)
        #expect(MatchPolicy().decide([atThreshold]) == .match(atThreshold))
    }

    @Test func anotherUserWithinMarginIsAmbiguous() {
        let best = match(alice, 0.40), rival = match(bob, 0.44)
        #expect(MatchPolicy().decide([best, rival]) == .ambiguous(best, rival))
        // The rival is the nearest other user, even behind more of the best's own templates.
        let second = match(alice, 0.41)
        #expect(MatchPolicy().decide([best, second, rival, match(bob, 0.45)]) == .ambiguous(best, rival))
    }

    @Test func sameUserTwiceIsNotAmbiguous() {
        let best = match(alice, 0.30)
        #expect(MatchPolicy().decide([best, match(alice, 0.31), match(alice, 0.33), match(bob, 0.9)]) == .match(best))
    }

    @Test func rivalOutsideMarginOrThresholdIsAMatch() {
        let best = match(alice, 0.30)
        #expect(MatchPolicy().decide([best, match(bob, 0.37)]) == .match(best))
        let close = match(alice, 0.48)
        #expect(MatchPolicy().decide([close, match(bob, 0.52)]) == .match(close), "rival beyond the threshold")
        let rival = match(bob, 0.39)
        #expect(MatchPolicy(threshold: 0.6, margin: 0.1).decide([best, rival]) == .ambiguous(best, rival), "a wider margin")
    }

    @Test func decidesOnRealSearchResults() {
        var rng = SplitMix64(seed: 77)
        let gallery = FaceGallery()
        let face = rng.unitScaleVector()
        let aliceTemplate = UUID(), bobTemplate = UUID()
        gallery.upsert(templateId: aliceTemplate, userId: alice, embedding: face)
        gallery.upsert(templateId: UUID(), userId: alice, embedding: rng.near(face, distance: 0.05))
        for _ in 0..<200 { gallery.upsert(templateId: UUID(), userId: UUID(), embedding: rng.unitScaleVector()) }
        let probe = rng.near(face, distance: 0.3)
        guard case .match(let m) = MatchPolicy().decide(gallery.search(probe, k: 5)) else {
            Issue.record("expected a match")
            return
        }
        #expect(m.userId == alice)
        // A look-alike enrolled under another user makes the same probe ambiguous.
        gallery.upsert(templateId: bobTemplate, userId: bob, embedding: rng.near(face, distance: 0.02))
        guard case .ambiguous(let first, let second) = MatchPolicy().decide(gallery.search(probe, k: 5)) else {
            Issue.record("expected ambiguity")
            return
        }
        #expect(Set([first.userId, second.userId]) == [alice, bob])
        // A stranger is no match.
        guard case .noMatch(let best) = MatchPolicy().decide(gallery.search(rng.unitScaleVector(), k: 5)) else {
            Issue.record("expected no match")
            return
        }
        #expect(best != nil)
    }
}
