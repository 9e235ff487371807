import AppRecords
@testable import AuthGateway
import FaceGateCore
import Foundation
import IdentityRecords
import Testing

/// `ActiveLiveness` over the in-memory challenge store: what a challenge asks for and to whom it is bound. The bursts
/// that answer challenges are judged on real photos in IntegrationTests' LivenessTests.
@Suite struct ActiveLivenessUseCaseTests {
    let clock = FakeClock()

    func app(_ model: FaceModel) -> AppRecord {
        AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: model, matchThreshold: model.defaultThreshold,
                  liveness: .initial, deviceBinding: .dpop, deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(),
                  quotas: .initial, keepEnrollmentPhotos: false, createdAt: Date())
    }

    @Test func actionsAreTwoOrThreeDistinctAndBlinksOnlyForModelsThatCheckThem() {
        var seen: [Bool: Set<[LivenessAction]>] = [:]
        for _ in 0..<300 {
            for blink in [true, false] {
                let actions = ActiveLiveness.randomActions(blink: blink)
                #expect((2...3).contains(actions.count) && Set(actions).count == actions.count, "\(actions)")
                if !blink { #expect(!actions.contains(.blink)) }
                seen[blink, default: []].insert(actions)
            }
        }
        // Head turns only: both orders; with blinks: every one of the 6 pairs' and 6 triples' orders shows up in 300 draws.
        #expect(seen[false] == [[.turnLeft, .turnRight], [.turnRight, .turnLeft]])
        #expect(seen[true]!.count == 12, "\(seen[true]!.count) different challenges")
    }

    @Test func aChallengeIsStoredForItsAppAndDeviceOnlyAndSpentOnce() async throws {
        let store = InMemoryLivenessChallenges(clock: clock)
        let sface = app(.sface2021dec)
        let challenge = try await ActiveLiveness(challenges: store).challenge(app: sface, device: "phone-1")
        #expect(challenge.challengeId.hasPrefix("lc_") && challenge.expiresIn == 120 && !challenge.actions.contains(.blink))
        let frames = [Data([1]), Data([2])]
        #expect(await errorCode { try await store.consume(challenge.challengeId, appId: sface.id, deviceId: "phone-2", frames: frames) } == .spoofDetected)
        #expect(try await store.consume(challenge.challengeId, appId: sface.id, deviceId: "phone-1", frames: frames) == challenge.actions)
        #expect(await errorCode { try await store.consume(challenge.challengeId, appId: sface.id, deviceId: "phone-1", frames: [Data([3])]) } == .spoofDetected)
        let late = try await ActiveLiveness(challenges: store).challenge(app: sface, device: "phone-1")
        clock.advance(seconds: 121)
        #expect(await errorCode { try await store.consume(late.challengeId, appId: sface.id, deviceId: "phone-1", frames: [Data([4])]) } == .spoofDetected)
    }
}
