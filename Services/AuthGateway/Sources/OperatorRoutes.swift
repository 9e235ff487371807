import FaceGateCore
import Foundation
import HTTPServer

/// Operator API (operator key): apps, users, face enrollment and templates, device resets.
/// Every change is a transaction on the affected app's chain (app creation on the platform chain).
struct OperatorRoutes: RouteCollection {
    let apps: any AppStore
    let appAdministration: AppAdministration
    let appErasure: AppErasure
    let userAdministration: UserAdministration
    let enrollment: Enrollment

    func boot(_ routes: APIRoutes) {
        routes.group(\.globalOperator).add("POST", "/v1/apps", answers: [AppAdministration.Created.self], idempotent: true) { request, context in
            // The settings are checked before anything is recorded; the app is created on the platform chain.
            let app = try appAdministration.check(try request.decodeJSON(AppAdministration.NewApp.self))
            return try await context.recorded(kind: "app.create", appId: platformAppId) { draft in
                .json(try await appAdministration.create(app, draft: &draft), status: 201)
            }
        }
        routes.group(\.anyOperator).add("GET", "/v1/apps", answers: [AppPage.self]) { _, context in
            .json(AppPage(items: try await apps.all(covered: context.caller.covers).map(\.publicView)))
        }
        let operators = routes.group(\.appOperator)
        operators.add("GET", "/v1/apps/{appId}", answers: [AppRecord.Public.self]) { _, context in .json(try await appAdministration.view(context.caller)) }
        operators.add("PATCH", "/v1/apps/{appId}", answers: [AppRecord.Public.self]) { request, context in
            let (app, changes) = (context.caller, try request.decodeJSON(AppAdministration.Changes.self))
            return try await context.recorded(kind: "app.update", appId: app.id) { draft in
                .json(try await appAdministration.view(try await appAdministration.update(app, with: changes, draft: &draft)))
            }
        }
        operators.add("DELETE", "/v1/apps/{appId}", answers: []) { _, context in
            // Recorded on the app's own chain, which outlives it: its last row says who deleted it.
            try await context.recorded(kind: "app.delete", appId: context.caller.id) { draft in
                try await appErasure.erase(context.caller, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/secret", answers: [AppAdministration.Rotated.self], maxBodyBytes: 1024) { request, context in
            // `{"previousSecretValidFor": seconds}` (optional; an empty body takes the default grace).
            struct Body: Decodable { var previousSecretValidFor: Int? }
            let grace = request.body.isEmpty ? nil : try request.decodeJSON(Body.self).previousSecretValidFor
            return try await context.recorded(kind: "app.secret.rotate", appId: context.caller.id) { draft in
                .json(try await appAdministration.rotateSecret(of: context.caller, previousSecretValidFor: grace, draft: &draft))
            }
        }
        operators.add("DELETE", "/v1/apps/{appId}/secret/previous", answers: []) { _, context in
            try await context.recorded(kind: "app.secret.revoke-previous", appId: context.caller.id) { draft in
                try await appAdministration.revokePreviousSecret(of: context.caller, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/users", answers: [UserAdministration.Created.self], idempotent: true) { request, context in
            struct Body: Decodable { var employeeNumber: String; var name: String }
            let (app, body) = (context.caller, try request.decodeJSON(Body.self))
            return try await context.recorded(kind: "user.create", appId: app.id) { draft in
                .json(try await userAdministration.create(app: app.id, employeeNumber: body.employeeNumber, name: body.name, draft: &draft), status: 201)
            }
        }
        // Cursor pages ordered by creation; the cursor is opaque (base64url of the last row's position).
        operators.add("GET", "/v1/apps/{appId}/users", answers: [UserAdministration.Page.self]) { request, context in
            .json(try await userAdministration.page(app: context.caller.id, limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"]))
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}", answers: [UserView.self]) { request, context in
            .json(try await userAdministration.user(try request.uuidParameter("userId"), app: context.caller.id))
        }
        operators.add("DELETE", "/v1/apps/{appId}/users/{userId}", answers: []) { request, context in
            let (app, userId) = (context.caller, try request.uuidParameter("userId"))
            return try await context.recorded(kind: "user.delete", appId: app.id) { draft in
                try await userAdministration.erase(userId, app: app.id, draft: &draft)
                return .noContent
            }
        }
        routes.group(\.limitedAppOperator).add("POST", "/v1/apps/{appId}/users/{userId}/faces", answers: [Enrolled.self], idempotent: true,
                                               upload: true) { request, context in
            try await enroll(request, context)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/faces", answers: [FacePage.self]) { request, context in
            .json(FacePage(items: try await userAdministration.faces(of: try request.uuidParameter("userId"), app: context.caller.id)))
        }
        operators.add("DELETE", "/v1/apps/{appId}/users/{userId}/faces/{templateId}", answers: []) { request, context in
            let (app, userId, templateId) = (context.caller, try request.uuidParameter("userId"), try request.uuidParameter("templateId"))
            return try await context.recorded(kind: "face.delete", appId: app.id) { draft in
                try await userAdministration.eraseFace(templateId, of: userId, app: app.id, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/devices/{deviceId}/reset", answers: []) { request, context in
            guard let device = request.pathParameters["deviceId"], !device.isEmpty else { throw APIError(.notFound, "no such device") }
            return try await context.recorded(kind: "device.reset", appId: context.caller.id, deviceId: device) { _ in
                try await userAdministration.resetDevice(device, app: context.caller.id)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/reset", answers: []) { request, context in
            let (app, userId) = (context.caller, try request.uuidParameter("userId"))
            return try await context.recorded(kind: "user.reset", appId: app.id) { draft in
                try await userAdministration.resetBinding(of: userId, app: app.id, draft: &draft)
                return .noContent
            }
        }
    }

    struct AppPage: Encodable { var items: [AppRecord.Public] }

    private func enroll(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        let (app, userId) = (context.caller, try request.uuidParameter("userId"))
        return try await context.recorded(kind: "face.enroll", appId: app.id) { draft in
            let enrolled = try await enrollment.enroll(app: app, user: userId, image: { try request.image() },
                                                       photoConsent: { try Self.photoConsent(request) }, faceBox: try Self.faceBox(request),
                                                       jobId: Enrollment.jobId(caller: context.actor, appId: app.id, userId: userId,
                                                                              idempotencyKey: request.headers[IdempotentRequests.header]),
                                                       draft: &draft)
            return .json(Enrolled(templateId: enrolled.templateId.wire, quality: enrolled.quality, photoKept: enrolled.photoKept,
                                  faceBox: enrolled.faceBox, otherFaces: enrolled.otherFaces), status: 201)
        }
    }

    struct Enrolled: Encodable {
        var templateId: String
        var quality: FaceQualityReport
        var photoKept: Bool
        /// The face enrolled (the photo's subject, or the operator's `faceBox`), and how many others the photo showed.
        var faceBox: FaceRegion?
        var otherFaces: Int
    }

    /// `faceBox=x,y,width,height` (query, or a multipart field): which of several faces to enroll. Malformed: INVALID_REQUEST.
    static func faceBox(_ request: HTTPRequest) throws -> FaceRegion? {
        var text = request.query["faceBox"]
        if text == nil, request.isMultipart {
            text = try request.multipartParts().first { $0.name == "faceBox" }.map { String(decoding: $0.body, as: UTF8.self) }
        }
        guard let text else { return nil }
        guard let box = FaceRegion(text: text) else {
            throw APIError(.invalidRequest, "faceBox must be x,y,width,height in pixels (whole numbers, width and height above 0)")
        }
        return box
    }

    /// `photoConsent=true` (query): the person agreed that the photo be kept, sealed, for a later move to another face
    /// model. Kept only where the app keeps enrollment photos.
    static func photoConsent(_ request: HTTPRequest) throws -> Bool {
        switch request.query["photoConsent"] {
        case nil, "false": return false
        case "true": return true
        default: throw APIError(.invalidRequest, "photoConsent must be true or false")
        }
    }

    struct FacePage: Encodable { var items: [FaceView] }
}
