import AppRecords
import FaceGateCore
import Foundation
import HTTPServer

/// Face login for client apps (Bearer access token; the device proven by its DPoP key, or named by `X-Device-Id` on
/// apps left in header mode), over HTTP: the decisions are `FaceLogin`'s.
struct FaceLoginRoutes: RouteCollection {
    let faceLogin: FaceLogin
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        let clients = routes.group(\.device, tag: .faceLogin)
        clients.add("POST", "/v1/face-login", "faceLogin", """
            Log in with a photo: 1:1 against the users a bound device key belongs to, else 1:N. A device key bound to nobody always \
            gets CONFIRM_REQUIRED. With the app's liveness.faceLogin active, send a burst answering a liveness challenge instead \
            (multipart challengeId + 2–12 frame fields)
            """, body: .upload(form: FaceLoginUpload.self),
                    answers: [.ok(FaceLoginOutcome.self, "SUCCESS with an identity token, or CONFIRM_REQUIRED on a new device")],
                    errors: [.moduleDisabled, .moduleNotFormal, .noFace, .noMatchFace, .ambiguousMatch, .imageFormatError, .lowQuality,
                             .spoofDetected, .credentialLocked, .rateLimited],
                    because: [.invalidRequest: "no X-Device-Id on a header app, one image where liveness needs a burst, a malformed multipart body"],
                    doors: [.faceLogin]) { request, context in
            let app = context.caller
            return try await context.recorded(kind: "face.login", appId: app.id) { draft in
                let (device, proofSpend) = try devices.deviceSpendingLater(request, app: app)
                draft.note(device)
                let answer = try await faceLogin.login(app: app, device: device, proofSpend: proofSpend, clientAddress: context.clientAddress,
                                                       probe: { try Self.probe(request, app: app) }, draft: &draft)
                return response(answer, transaction: draft.id)
            }
        }
        clients.add("POST", "/v1/face-login/confirm", "confirmFaceLogin",
                    "Confirm a new device with the employee number (signed by the same device key on dpop apps); binds the device",
                    body: .json(ConfirmBody.self), answers: [.ok(FaceGateIdentity.self, "SUCCESS with an identity token")],
                    errors: [.moduleDisabled, .moduleNotFormal, .bindingTicketInvalid, .confirmationInvalid, .employeeNumberMismatch,
                             .credentialLocked, .rateLimited],
                    because: [.confirmationInvalid: "unknown, used, voided or expired",
                              .employeeNumberMismatch: "a wrong number and a face that is not the claimed user's get the same answer; five void the confirmation"],
                    doors: [.faceLoginConfirm], maxBodyBytes: 4096) { request, context in
            let (app, body) = (context.caller, try request.decodeJSON(ConfirmBody.self))
            return try await context.recorded(kind: "face.login.confirm", appId: app.id) { draft in
                let device = try await devices.device(request, app: app)
                draft.note(device)
                let answer = try await faceLogin.confirm(app: app, device: device, clientAddress: context.clientAddress,
                                                         confirmationId: body.confirmationId, employeeNumber: body.employeeNumber,
                                                         bindingTicket: body.bindingTicket, draft: &draft)
                return response(answer, transaction: draft.id)
            }
        }
    }

    /// One image; with the app's face-login liveness `active`, a burst answering a liveness challenge instead.
    private static func probe(_ request: HTTPRequest, app: AppRecord) throws -> FaceLogin.Probe {
        guard app.liveness.faceLogin == .active else { return .image(try request.image()) }
        guard request.isMultipart, (try? request.multipartParts())?.contains(where: { $0.name == "frame" }) == true else {
            throw APIError(.invalidRequest, "this app requires active liveness for face login: instead of one image, send multipart/form-data "
                           + "with a challengeId from GET /v1/liveness/challenges and 2–12 frame fields doing its actions")
        }
        let (challengeId, frames) = try request.livenessFrames()
        return .burst(challengeId: challengeId, frames: frames)
    }

    private func response(_ answer: FaceLogin.Answer, transaction: UUID) -> HTTPResponse {
        switch answer {
        case .success(let token, let user):
            return .json(FaceLoginOutcome.success(faceLogin.tokens.identity(token, user: user, transaction: transaction)))
        case .confirmRequired(let confirmationId):
            return .json(FaceLoginOutcome.confirmationRequired(FaceLoginConfirmation(
                confirmationId: confirmationId.wire, transactionId: transaction.wire, expiresIn: faceLogin.confirmationTTL)))
        }
    }

    struct ConfirmBody: Decodable, DocumentedSchema {
        static let schemaName = "Confirmation"
        var confirmationId: UUID
        var employeeNumber: String
        var bindingTicket: String?
    }
}

extension IdentityTokenIssuer {
    /// A login's answer to the client: its identity token and how long it lives.
    func identity(_ token: String, user: UUID, transaction: UUID) -> FaceGateIdentity {
        FaceGateIdentity(identityToken: token, expiresIn: Int(ttl), transactionId: transaction.wire, userId: user.wire)
    }
}
