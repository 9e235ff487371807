import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import HTTPServer

/// Active-liveness challenges for client apps (`ActiveLiveness`); the bursts of frames that answer them are read by
/// `HTTPRequest.livenessFrames`.
struct LivenessRoutes: RouteCollection {
    let liveness: ActiveLiveness
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        routes.group(\.device, tag: .liveness).add("GET", "/v1/liveness/challenges", "getLivenessChallenge", """
            A liveness challenge: 2–3 random actions to perform in front of the camera; single use, bound to the app and device, 120 s
            """, answers: [.ok(LivenessChallenge.self, "The challenge")]) { request, context in
            let app = context.caller
            let device = try await context.refusalRecorded(kind: "liveness.challenge.refused", appId: app.id) { _ in
                try await challengedDevice(request, app: app)
            }
            return .json(try await liveness.challenge(app: app, device: device))
        }
    }

    /// The device a challenge is bound to: the app's device identity, except that a signed request on an app that names
    /// devices by header binds it to the signing key (a registered kiosk signs on every app, and logs in by its key).
    private func challengedDevice(_ request: HTTPRequest, app: AppRecord) async throws -> String {
        if app.deviceBinding == .header, let key = try await devices.signingKey(request, appId: app.id) { return key }
        return try await devices.device(request, app: app).id
    }
}
