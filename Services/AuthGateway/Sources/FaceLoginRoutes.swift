import FaceGateCore
import Foundation
import HTTPServer

/// Face login for client apps (Bearer access token; the device proven by its DPoP key, or named by `X-Device-Id` on
/// apps left in header mode), over HTTP: the decisions are `FaceLogin`'s.
extension GatewayContext {
    func registerFaceLoginRoutes(on router: APIRoutes) {
        let clients = router.group(client)
        clients.add("POST", "/v1/face-login", answers: [FaceLoginOutcome.self], doors: [.faceLogin], upload: true) { [self] request, app in try await faceLogin(request, app: app) }
        clients.add("POST", "/v1/face-login/confirm", answers: [FaceLoginOutcome.self], doors: [.faceLoginConfirm], maxBodyBytes: 4096) { [self] request, app in try await confirmFaceLogin(request, app: app) }
    }

    var attempts: AttemptGuard {
        AttemptGuard(store: attemptCounters,
                     rule: .init(throttleAfter: configuration.throttleAfter, throttleSeconds: configuration.throttleSeconds,
                                 lockAfter: configuration.lockAfter),
                     addressRule: .init(throttleAfter: configuration.addressThrottleAfter, throttleSeconds: configuration.throttleSeconds,
                                        lockAfter: 0, failureWindow: configuration.addressFailureWindow))
    }

    var faceLoginFlow: FaceLogin {
        FaceLogin(admission: apps, attempts: attempts, bindings: bindings, users: users, challenges: livenessChallenges, matcher: self,
                  tokens: identityTokens, kioskKeys: kioskRegistry, confirmationTTL: Int(configuration.confirmationTTL)) { [self] app, user, image, target in
            reenroll(app: app, user: user, image: image, target: target)
        }
    }

    func faceLogin(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        return try await recorded(request, kind: "face.login", appId: app.id) { draft in
            let device = try await clientDevice(request, app: app)
            draft.note(device)
            let answer = try await faceLoginFlow.login(app: app, device: device, clientAddress: clientAddress(request),
                                                       probe: { try faceLoginProbe(request, app: app) }, draft: &draft)
            return response(answer, transaction: draft.id)
        }
    }

    /// One image; with the app's face-login liveness `active`, a burst answering a liveness challenge instead.
    private func faceLoginProbe(_ request: HTTPRequest, app: AppRecord) throws -> FaceLogin.Probe {
        guard app.liveness.faceLogin == .active else { return .image(Data(try image(request))) }
        let isMultipart = (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("multipart/form-data")
        guard isMultipart, (try? request.multipartParts())?.contains(where: { $0.name == "frame" }) == true else {
            throw APIError(.invalidRequest, "this app requires active liveness for face login: instead of one image, send multipart/form-data "
                           + "with a challengeId from GET /v1/liveness/challenges and 2–12 frame fields doing its actions")
        }
        let (challengeId, frames) = try livenessFrames(from: request)
        return .burst(challengeId: challengeId, frames: frames)
    }

    private func response(_ answer: FaceLogin.Answer, transaction: UUID) -> HTTPResponse {
        switch answer {
        case .success(let token, let user):
            return .json(FaceLoginOutcome.success(identity(token, user: user, transaction: transaction)))
        case .confirmRequired(let confirmationId):
            return .json(FaceLoginOutcome.confirmationRequired(FaceLoginConfirmation(
                confirmationId: confirmationId.wire, transactionId: transaction.wire, expiresIn: Int(configuration.confirmationTTL))))
        }
    }

    /// A login's answer to the client: its identity token and how long it lives.
    func identity(_ token: String, user: UUID, transaction: UUID) -> FaceGateIdentity {
        FaceGateIdentity(identityToken: token, expiresIn: Int(configuration.identityTokenTTL), transactionId: transaction.wire, userId: user.wire)
    }

    struct ConfirmBody: Decodable {
        var confirmationId: UUID
        var employeeNumber: String
        var bindingTicket: String?
    }

    func confirmFaceLogin(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(ConfirmBody.self)
        return try await recorded(request, kind: "face.login.confirm", appId: app.id) { draft in
            let device = try await clientDevice(request, app: app)
            draft.note(device)
            let answer = try await faceLoginFlow.confirm(app: app, device: device, clientAddress: clientAddress(request),
                                                         confirmationId: body.confirmationId, employeeNumber: body.employeeNumber,
                                                         bindingTicket: body.bindingTicket, draft: &draft)
            return response(answer, transaction: draft.id)
        }
    }

    /// Face, device-biometric and kiosk logins' identity tokens, signed with the gateway's key.
    var identityTokens: IdentityTokenIssuer {
        IdentityTokenIssuer(issuer: configuration.issuer, key: signingKey, ttl: configuration.identityTokenTTL)
    }
}

extension GatewayContext: FaceMatching {
    func match(_ job: FaceJob, messageId: String?) async throws -> FaceJobResult { try await faceJob(job, messageId: messageId) }
}
