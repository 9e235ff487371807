import Crypto
import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// Active-liveness challenges (`one_time_challenges` of purpose `liveness`) and the digests of the frames sent to
/// answer them (`used_liveness_frames`).
package protocol LivenessChallengeStore: Sendable {
    func issue(_ challengeId: String, appId: UUID, deviceId: String, actions: [LivenessAction], ttlSeconds: Int) async throws
    /// Spends a challenge (atomically, once) and returns the actions it asked for. Unknown, expired, already used,
    /// or issued to another app or device → `SPOOF_DETECTED`: a replayed answer. So is a burst holding a frame
    /// (byte for byte) that was sent with an earlier challenge; the challenge is spent either way. Frames repeated
    /// inside one burst are the analyser's to judge.
    func consume(_ challengeId: String, appId: UUID, deviceId: String, frames: [Data]) async throws -> [LivenessAction]
}

package enum LivenessChallenges {
    /// How long frame digests are kept for replay detection (7 days).
    package static let usedFrameRetentionSeconds = 7 * 86400

    package static let unknown = APIError(.spoofDetected, "the liveness challenge is unknown, expired or already used; get a new one")
    package static let replayed = APIError(.spoofDetected, "these frames were already sent in an earlier attempt")
}

package struct PostgresLivenessChallenges: LivenessChallengeStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    private struct Stored: Codable { var actions: [LivenessAction] }

    package func issue(_ challengeId: String, appId: UUID, deviceId: String, actions: [LivenessAction], ttlSeconds: Int) async throws {
        _ = try await database.query("""
            INSERT INTO one_time_challenges (id, app_id, purpose, subject, data, expires_at)
            VALUES (\(challengeId), \(appId), 'liveness', \(deviceId), \(Stored(actions: actions).jsonText)::jsonb,
                    now() + make_interval(secs => \(ttlSeconds)))
            """)
    }

    package func consume(_ challengeId: String, appId: UUID, deviceId: String, frames: [Data]) async throws -> [LivenessAction] {
        let digests = Array(Set(frames.map { SHA256.hash(Array($0)) }))
        let retention = LivenessChallenges.usedFrameRetentionSeconds
        let (data, replayed) = try await database.withTransaction { connection -> (String?, Bool) in
            let rows = try await connection.query("""
                UPDATE one_time_challenges SET used_at = now()
                WHERE id = \(challengeId) AND app_id = \(appId) AND purpose = 'liveness' AND subject = \(deviceId)
                  AND used_at IS NULL AND expires_at > now()
                RETURNING data::text AS data
                """)
            guard let row = rows.first else { return (nil, false) }
            var fresh = 0
            for digest in digests {
                fresh += try await connection.query("""
                    INSERT INTO used_liveness_frames (digest, app_id, expires_at)
                    VALUES (\(digest), \(appId), now() + make_interval(secs => \(retention)))
                    ON CONFLICT (app_id, digest) DO NOTHING
                    """).affectedRows
            }
            return (try row.decode("data", as: String.self), fresh < digests.count)
        }
        guard let data else { throw LivenessChallenges.unknown }
        if replayed { throw LivenessChallenges.replayed }
        return try FaceGateJSON.decode(Stored.self, from: Array(data.utf8)).actions
    }
}
