import FaceGateCore
import Foundation
import HTTPServer

// Stand-ins until the liveness routes land (same signatures).
extension GatewayContext {
    func livenessFrames(from request: HTTPRequest) throws -> (challengeId: String, frames: [Data]) {
        let parts = try request.multipartParts()
        let frames = parts.filter { $0.name == "frame" }.map { Data($0.body) }
        let challenge = parts.first { $0.name == "challengeId" }.map { String(decoding: $0.body, as: UTF8.self) } ?? ""
        guard frames.count >= 1 else { throw APIError(.invalidRequest, "frames required") }
        return (challenge, frames)
    }

    func consumeLivenessChallenge(_ challengeId: String, appId: UUID, deviceId: String) async throws -> [LivenessAction] {
        [.blink]
    }
}
