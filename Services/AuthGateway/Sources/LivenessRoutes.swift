import Crypto
import FaceGateCore
import Foundation
import HTTPServer

/// Active-liveness challenges for client apps (`ActiveLiveness`), and the bursts of frames that answer them.
extension GatewayContext {
    static let livenessFrameCount = 2...12

    func registerLivenessRoutes(on router: APIRoutes) {
        router.group(client).add("GET", "/v1/liveness/challenges", answers: [LivenessChallenge.self]) { [self] request, app in
            let device = try await refusalRecorded(request, kind: "liveness.challenge.refused", appId: app.id) { _ in
                try await challengedDevice(request, app: app)
            }
            return .json(try await ActiveLiveness(challenges: livenessChallenges).challenge(app: app, device: device))
        }
    }

    /// The device a challenge is bound to: the app's device identity, except that a signed request on an app that names
    /// devices by header binds it to the signing key (a registered kiosk signs on every app, and logs in by its key).
    private func challengedDevice(_ request: HTTPRequest, app: AppRecord) async throws -> String {
        if app.deviceBinding == .header, request.headers["DPoP"] != nil { return try await dpopProof(request, appId: app.id).thumbprint }
        return try await clientDevice(request, app: app).id
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
}
