import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import PostgresClient

/// Active-liveness challenges for client apps (Bearer access token + `X-Device-Id`): 2–3 distinct actions
/// drawn from the CSPRNG, single use, bound to the app and the device, valid 120 s. The frames answering
/// one are read by `livenessFrames(from:)` and the challenge spent by `consumeLivenessChallenge`.
extension GatewayContext {
    static let livenessChallengeSeconds = 120
    static let livenessFrameCount = 2...12

    func registerLivenessRoutes(on router: APIRoutes) {
        router.add("GET", "/v1/liveness/challenges") { [self] request in try await livenessChallenge(request) }
    }

    func livenessChallenge(_ request: HTTPRequest) async throws -> HTTPResponse {
        let app = try await requireClient(request)
        let device = try await clientDevice(request, app: app).id
        let actions = Self.randomActions(blink: app.faceModel.challengesBlinks)
        let challengeId = "lc_" + Base64URL.encode(SecureRandom.bytes(24))
        struct Stored: Encodable { var actions: [LivenessAction] }
        _ = try await database.query("""
            INSERT INTO one_time_challenges (id, app_id, purpose, subject, data, expires_at)
            VALUES (\(challengeId), \(app.id), 'liveness', \(device), \(Stored(actions: actions).jsonText)::jsonb,
                    now() + make_interval(secs => \(Self.livenessChallengeSeconds)))
            """)
        struct Issued: Encodable { var challengeId: String; var actions: [LivenessAction]; var expiresIn: Int }
        return .json(Issued(challengeId: challengeId, actions: actions, expiresIn: Self.livenessChallengeSeconds))
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

    /// The multipart fields `challengeId` (text) and `frame` (repeated, in capture order, 2–12 JPEG/PNG
    /// files). Not multipart, no challenge, or a wrong count → `INVALID_REQUEST`; a frame that is not a
    /// JPEG or PNG → `IMAGE_FORMAT_ERROR`.
    func livenessFrames(from request: HTTPRequest) throws -> (challengeId: String, frames: [Data]) {
        let (challengeId, frames) = try livenessFrames(from: request, challengeRequired: true)
        return (challengeId!, frames)
    }

    /// As `livenessFrames(from:)`; without `challengeRequired` a missing `challengeId` is nil.
    /// Without `challengeRequired` (the app's liveness is off) one frame is a whole selfie, as the kiosk SDK
    /// takes it: a single `frame` field, or one image as the body.
    func livenessFrames(from request: HTTPRequest, challengeRequired: Bool) throws -> (challengeId: String?, frames: [Data]) {
        let contentType = (request.headers["Content-Type"] ?? "").lowercased()
        if !challengeRequired, contentType.hasPrefix("image/") {
            return (nil, [Data(try image(request))])
        }
        guard contentType.hasPrefix("multipart/form-data") else {
            throw APIError(.invalidRequest, "send the frames as multipart/form-data: a challengeId field and \(Self.livenessFrameCount.lowerBound)–\(Self.livenessFrameCount.upperBound) frame fields")
        }
        let parts: [MultipartPart]
        do {
            parts = try request.multipartParts()
        } catch {
            throw APIError(.invalidRequest, "the multipart body is malformed")
        }
        let challengeId = parts.first { $0.name == "challengeId" }
            .map { String(decoding: $0.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
            .flatMap { $0.isEmpty ? nil : $0 }
        if challengeRequired, challengeId == nil {
            throw APIError(.invalidRequest, "the challengeId field is missing; get one from GET /v1/liveness/challenges")
        }
        if let challengeId, challengeId.utf8.count > 128 {
            throw APIError(.invalidRequest, "the challengeId is too long")
        }
        let frames = parts.filter { $0.name == "frame" }.map(\.body)
        let allowed = challengeRequired ? Self.livenessFrameCount : 1...Self.livenessFrameCount.upperBound
        guard allowed.contains(frames.count) else {
            throw APIError(.invalidRequest, "send \(allowed.lowerBound)–\(allowed.upperBound) frame fields in capture order; got \(frames.count)")
        }
        for (index, frame) in frames.enumerated() where !Self.isJPEGOrPNG(frame) {
            throw APIError(.imageFormatError, "frame \(index) is not a JPEG or PNG file")
        }
        return (challengeId, frames.map { Data($0) })
    }

    /// Spends a liveness challenge (atomically, once) and returns the actions it asked for. Unknown,
    /// expired, already used, or issued to another app or device → `SPOOF_DETECTED`: a replayed answer.
    /// So is a burst holding a frame (byte for byte) that was sent with an earlier challenge; the
    /// challenge is spent either way. Frames repeated inside one burst are the analyser's to judge.
    func consumeLivenessChallenge(_ challengeId: String, appId: UUID, deviceId: String, frames: [Data]) async throws -> [LivenessAction] {
        let digests = Array(Set(frames.map { SHA256.hash(Array($0)) }))
        let retention = Self.usedFrameRetentionSeconds
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
                    ON CONFLICT (digest) DO NOTHING
                    """).affectedRows
            }
            return (try row.decode("data", as: String.self), fresh < digests.count)
        }
        guard let data else {
            throw APIError(.spoofDetected, "the liveness challenge is unknown, expired or already used; get a new one")
        }
        if replayed { throw APIError(.spoofDetected, "these frames were already sent in an earlier attempt") }
        struct Stored: Decodable { var actions: [LivenessAction] }
        return try FaceGateJSON.decode(Stored.self, from: Array(data.utf8)).actions
    }

    /// How long frame digests are kept for replay detection (7 days).
    static let usedFrameRetentionSeconds = 7 * 86400
}
