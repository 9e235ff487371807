import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import KafkaClient
import ServiceKit

/// Operator API (operator key): apps, users, face enrollment and templates, device resets.
/// Every change is a transaction on the affected app's chain (app creation on the platform chain).
extension GatewayContext {
    func registerOperatorRoutes(on router: APIRoutes) {
        router.group(globalOperator).add("POST", "/v1/apps", answers: [AppAdministration.Created.self], idempotent: true) { [self] request, _ in try await createApp(request) }
        router.group(anyOperator).add("GET", "/v1/apps", answers: [AppPage.self]) { [self] _, scope in try await listApps(scope: scope) }
        let operators = router.group(appOperator)
        operators.add("GET", "/v1/apps/{appId}", answers: [AppRecord.Public.self]) { _, app in .json(app.publicView) }
        operators.add("PATCH", "/v1/apps/{appId}", answers: [AppRecord.Public.self]) { [self] request, app in try await patchApp(request, app: app) }
        operators.add("DELETE", "/v1/apps/{appId}", answers: []) { [self] request, app in
            // Recorded on the app's own chain, which outlives it: its last row says who deleted it.
            try await recorded(request, kind: "app.delete", appId: app.id) { draft in
                try await AppErasure(apps: apps, keys: apiKeys, gallery: self).erase(app, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/secret", answers: [AppAdministration.Rotated.self], maxBodyBytes: 1024) { [self] request, app in try await rotateSecret(request, app: app) }
        operators.add("DELETE", "/v1/apps/{appId}/secret/previous", answers: []) { [self] request, app in
            try await recorded(request, kind: "app.secret.revoke-previous", appId: app.id) { draft in
                try await appAdministration.revokePreviousSecret(of: app, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/users", answers: [UserAdministration.Created.self], idempotent: true) { [self] request, app in try await createUser(request, app: app) }
        operators.add("GET", "/v1/apps/{appId}/users", answers: [UserAdministration.Page.self]) { [self] request, app in try await listUsers(request, app: app) }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}", answers: [UserView.self]) { [self] request, app in
            .json(try await userAdministration.user(try request.uuidParameter("userId"), app: app.id))
        }
        operators.add("DELETE", "/v1/apps/{appId}/users/{userId}", answers: []) { [self] request, app in try await deleteUser(request, app: app) }
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/faces", answers: [Enrolled.self], idempotent: true, upload: true) { [self] request, app in
            try await enrollFace(request, app: app)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/faces", answers: [FacePage.self]) { [self] request, app in try await listFaces(request, app: app) }
        operators.add("DELETE", "/v1/apps/{appId}/users/{userId}/faces/{templateId}", answers: []) { [self] request, app in
            try await deleteFace(request, app: app)
        }
        operators.add("POST", "/v1/apps/{appId}/devices/{deviceId}/reset", answers: []) { [self] request, app in try await resetDevice(request, app: app) }
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/reset", answers: []) { [self] request, app in
            try await resetUserBinding(request, app: app)
        }
    }

    func existingApp(_ request: HTTPRequest) async throws -> AppRecord {
        guard let app = try await apps.find(try request.uuidParameter("appId")) else { throw APIError(.notFound, "no such app") }
        return app
    }

    var appAdministration: AppAdministration {
        AppAdministration(apps: apps, ctidPublicKey: configuration.ctidPublicKey, secretGraceSeconds: configuration.secretGraceSeconds)
    }

    /// The settings are checked before anything is recorded; the app is created on the platform chain.
    func createApp(_ request: HTTPRequest) async throws -> HTTPResponse {
        let app = try appAdministration.check(try request.decodeJSON(AppAdministration.NewApp.self))
        return try await recorded(request, kind: "app.create", appId: platformAppId) { draft in
            .json(try await appAdministration.create(app, draft: &draft), status: 201)
        }
    }

    struct AppPage: Encodable { var items: [AppRecord.Public] }

    func listApps(scope: OperatorScope) async throws -> HTTPResponse {
        .json(AppPage(items: try await apps.all(covered: scope.covers).map(\.publicView)))
    }

    func patchApp(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let changes = try request.decodeJSON(AppAdministration.Changes.self)
        return try await recorded(request, kind: "app.update", appId: app.id) { draft in
            .json(try await appAdministration.update(app, with: changes, draft: &draft).publicView)
        }
    }

    /// `{"previousSecretValidFor": seconds}` (optional; an empty body takes the default grace).
    func rotateSecret(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        struct Body: Decodable { var previousSecretValidFor: Int? }
        let grace = request.body.isEmpty ? nil : try request.decodeJSON(Body.self).previousSecretValidFor
        return try await recorded(request, kind: "app.secret.rotate", appId: app.id) { draft in
            .json(try await appAdministration.rotateSecret(of: app, previousSecretValidFor: grace, draft: &draft))
        }
    }

    var userAdministration: UserAdministration { UserAdministration(roster: roster, attempts: attempts, gallery: self) }

    func createUser(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        struct Body: Decodable { var employeeNumber: String; var name: String }
        let body = try request.decodeJSON(Body.self)
        return try await recorded(request, kind: "user.create", appId: app.id) { draft in
            .json(try await userAdministration.create(app: app.id, employeeNumber: body.employeeNumber, name: body.name, draft: &draft), status: 201)
        }
    }

    /// Cursor pages ordered by creation; the cursor is opaque (base64url of the last row's position).
    func listUsers(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        .json(try await userAdministration.page(app: app.id, limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"]))
    }

    func deleteUser(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        return try await recorded(request, kind: "user.delete", appId: app.id) { draft in
            try await userAdministration.erase(userId, app: app.id, draft: &draft)
            return .noContent
        }
    }

    var enrollment: Enrollment { Enrollment(roster: roster, matcher: self, maxFacesPerUser: configuration.maxFacesPerUser) }

    func enrollFace(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        try admitServerCall(request)
        return try await recorded(request, kind: "face.enroll", appId: app.id) { draft in
            let enrolled = try await enrollment.enroll(app: app, user: userId, image: { Data(try image(request)) },
                                                       photoConsent: { try Self.photoConsent(request) }, faceBox: try Self.faceBox(request),
                                                       jobId: Enrollment.jobId(caller: request.headers["Authorization"] ?? "", appId: app.id, userId: userId,
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
        if text == nil, (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("multipart/form-data") {
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

    func listFaces(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        .json(FacePage(items: try await userAdministration.faces(of: try request.uuidParameter("userId"), app: app.id)))
    }

    func deleteFace(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        let templateId = try request.uuidParameter("templateId")
        return try await recorded(request, kind: "face.delete", appId: app.id) { draft in
            try await userAdministration.eraseFace(templateId, of: userId, app: app.id, draft: &draft)
            return .noContent
        }
    }

    func resetDevice(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        guard let device = request.pathParameters["deviceId"], !device.isEmpty else { throw APIError(.notFound, "no such device") }
        return try await recorded(request, kind: "device.reset", appId: app.id, deviceId: device) { _ in
            try await userAdministration.resetDevice(device, app: app.id)
            return .noContent
        }
    }

    func resetUserBinding(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        return try await recorded(request, kind: "user.reset", appId: app.id) { draft in
            try await userAdministration.resetBinding(of: userId, app: app.id, draft: &draft)
            return .noContent
        }
    }
}

extension GatewayContext: GalleryBroadcast {
    func broadcast(_ change: GalleryChange) async {
        do {
            _ = try await producer.send(KafkaRecord(topic: runtime.topics.galleryChanges, key: Array(change.templateId.uuidString.lowercased().utf8),
                                                    value: try FaceGateJSON.encode(change), headers: [TraceContext.header]))
        } catch {
            logger.warning("gallery change not broadcast; matchers apply it at their next reconciliation", ["error": "\(error)"])
        }
    }
}
