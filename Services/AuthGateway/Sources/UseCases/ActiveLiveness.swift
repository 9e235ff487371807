import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// Active-liveness challenges for client apps (`GET /v1/liveness/challenges`), without HTTP: 2–3 distinct actions drawn
/// from the CSPRNG, single use, bound to the app and the device, valid 120 s. The burst answering one is judged by the
/// matcher after `LivenessChallengeStore.consume` spends the challenge.
struct ActiveLiveness: Sendable {
    let challenges: any LivenessChallengeStore
    static let challengeSeconds = 120

    func challenge(app: AppRecord, device: String) async throws -> LivenessChallenge {
        let actions = Self.randomActions(blink: app.faceModel.challengesBlinks)
        let challengeId = "lc_" + Base64URL.encode(SecureRandom.bytes(24))
        try await challenges.issue(challengeId, appId: app.id, deviceId: device, actions: actions, ttlSeconds: Self.challengeSeconds)
        return LivenessChallenge(challengeId: challengeId, actions: actions, expiresIn: Self.challengeSeconds)
    }

    /// Two or three different actions in a random order (a shuffle of all three, cut); without blinks, both
    /// head turns in a random order.
    static func randomActions(blink: Bool) -> [LivenessAction] {
        var pool = LivenessAction.allCases.filter { blink || $0 != .blink }
        var chosen: [LivenessAction] = []
        let randomBytes = SecureRandom.bytes(4)
        let count = min(pool.count, 2 + Int(randomBytes[0] & 1))
        for index in 0..<count {
            let pick = Int(randomBytes[index + 1]) % pool.count
            chosen.append(pool.remove(at: pick))
        }
        return chosen
    }
}
