import AppRecords
import FaceGateCore
import IdentityRecords
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
        routes.group(\.globalOperator, tag: .apps).add(
            "POST", "/v1/apps", "createApp", "Create an app (its secrets are shown only here)",
            body: .json(AppAdministration.NewApp.self), answers: [.created(AppAdministration.Created.self, "Created")], idempotent: true
        ) { request, context in
            // The settings are checked before anything is recorded; the app is created on the platform chain.
            let app = try appAdministration.check(try request.decodeJSON(AppAdministration.NewApp.self))
            return try await context.recorded(kind: "app.create", appId: platformAppId) { draft in
                .json(try await appAdministration.create(app, draft: &draft), status: 201)
            }
        }
        routes.group(\.anyOperator, tag: .apps).add("GET", "/v1/apps", "listApps", "List the apps the operator key covers",
                                                answers: [.ok(AppPage.self, "The apps")]) { _, context in
            .json(AppPage(items: try await apps.all(covered: context.caller.covers).map(\.publicView)))
        }
        let operators = routes.group(\.appOperator, tag: .apps)
        operators.add("GET", "/v1/apps/{appId}", "getApp", "Get an app (no secrets)", answers: [.ok(AppRecord.Public.self, "The app")]) { _, context in .json(try await appAdministration.view(context.caller)) }
        operators.add("PATCH", "/v1/apps/{appId}", "updateApp",
                      "Change modules, threshold, liveness policy, device binding, kiosk approval or quotas",
                      body: .json(AppAdministration.Changes.self), answers: [.ok(AppRecord.Public.self, "The app after the change")]) { request, context in
            let (app, changes) = (context.caller, try request.decodeJSON(AppAdministration.Changes.self))
            return try await context.recorded(kind: "app.update", appId: app.id) { draft in
                .json(try await appAdministration.view(try await appAdministration.update(app, with: changes, draft: &draft)))
            }
        }
        operators.add("DELETE", "/v1/apps/{appId}", "deleteApp", """
            Delete the app and all its data: users, templates (dropped from every matcher), kept photos, devices, device credentials, \
            kiosks and their sessions, CTID rows, counters; operator keys stop naming it (those that named only it are revoked). \
            Its audit trail and chain stay, readable by its auditors, and end with the app.delete row
            """, answers: [.noContent("Deleted")]) { _, context in
            // Recorded on the app's own chain, which outlives it: its last row says who deleted it.
            try await context.recorded(kind: "app.delete", appId: context.caller.id) { draft in
                try await appErasure.erase(context.caller, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/secret", "rotateAppSecret", """
            Rotate the app secret. Access tokens issued before are refused; the previous secret may mint access tokens and exchange \
            identity tokens during its grace (and those tokens die with it), nothing else
            """, body: .json(RotateSecret.self, required: false), answers: [.ok(AppAdministration.Rotated.self, "The new secret")],
                      maxBodyBytes: 1024) { request, context in
            let grace = request.body.isEmpty ? nil : try request.decodeJSON(RotateSecret.self).previousSecretValidFor
            return try await context.recorded(kind: "app.secret.rotate", appId: context.caller.id) { draft in
                .json(try await appAdministration.rotateSecret(of: context.caller, previousSecretValidFor: grace, draft: &draft))
            }
        }
        operators.add("DELETE", "/v1/apps/{appId}/secret/previous", "revokePreviousAppSecret", """
            End the previous secret's grace now: it stops minting access tokens at once, and the access tokens it minted stop working
            """, answers: [.noContent("Revoked (also when it had no grace left)")]) { _, context in
            try await context.recorded(kind: "app.secret.revoke-previous", appId: context.caller.id) { draft in
                try await appAdministration.revokePreviousSecret(of: context.caller, draft: &draft)
                return .noContent
            }
        }
        let users = routes.group(\.appOperator, tag: .users)
        users.add("POST", "/v1/apps/{appId}/users", "createUser", "Create a user", body: .json(NewUser.self),
                  answers: [.created(UserAdministration.Created.self, "Created")], errors: [.conflict],
                  because: [.conflict: "the employee number exists in this app"], idempotent: true) { request, context in
            let (app, body) = (context.caller, try request.decodeJSON(NewUser.self))
            return try await context.recorded(kind: "user.create", appId: app.id) { draft in
                .json(try await userAdministration.create(app: app.id, employeeNumber: body.employeeNumber, name: body.name, draft: &draft), status: 201)
            }
        }
        // Cursor pages ordered by creation; the cursor is opaque (base64url of the last row's position).
        users.add("GET", "/v1/apps/{appId}/users", "listUsers", "List users in creation order (cursor pages)",
                  parameters: [.cursor, Parameter(name: "limit", schema: ["type": "integer", "minimum": 1, "maximum": 500, "default": 50])],
                  answers: [.ok(UserAdministration.Page.self, "One page")], because: [.invalidRequest: "a cursor this API did not issue"]) { request, context in
            .json(try await userAdministration.page(app: context.caller.id, limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"]))
        }
        users.add("GET", "/v1/apps/{appId}/users/{userId}", "getUser", "Get a user", answers: [.ok(UserView.self, "The user")]) { request, context in
            .json(try await userAdministration.user(try request.uuidParameter("userId"), app: context.caller.id))
        }
        users.add("DELETE", "/v1/apps/{appId}/users/{userId}", "deleteUser", "Delete a user; templates are erased from storage and every matcher",
                  answers: [.noContent("Deleted")]) { request, context in
            let (app, userId) = (context.caller, try request.uuidParameter("userId"))
            return try await context.recorded(kind: "user.delete", appId: app.id) { draft in
                try await userAdministration.erase(userId, app: app.id, draft: &draft)
                return .noContent
            }
        }
        routes.group(\.limitedAppOperator, tag: .faces).add(
            "POST", "/v1/apps/{appId}/users/{userId}/faces", "enrollFace", """
            Enroll a face from a photo (quality gate, duplicate check); a user holds at most FACEGATE_MAX_FACES_PER_USER templates \
            (default 5)
            """,
            body: .upload(form: EnrollmentUpload.self),
            parameters: [Parameter(name: "faceBox", schema: ["type": "string", "pattern": "^[0-9]+,[0-9]+,[0-9]+,[0-9]+$"], description: """
                            x,y,width,height in pixels: which face to enroll when the photo shows several (the detected face \
                            overlapping it most); without it the photo's clear subject is taken, or the photo refused with LOW_QUALITY, \
                            reason AMBIGUOUS_SUBJECT and every face's box
                            """),
                         Parameter(name: "photoConsent", schema: ["type": "boolean", "default": false], description: """
                            The person agreed that the photo be kept, sealed, for a later move to another face model; kept only where \
                            the app's keepEnrollmentPhotos is on
                            """)],
            answers: [.created(Enrolled.self, "Enrolled")],
            errors: [.moduleNotFormal, .faceLimitReached, .noFace, .imageFormatError, .lowQuality, .duplicateFace],
            because: [.moduleNotFormal: "the trial gallery is full"], idempotent: true
        ) { request, context in
            try await enroll(request, context)
        }
        let faces = routes.group(\.appOperator, tag: .faces)
        faces.add("GET", "/v1/apps/{appId}/users/{userId}/faces", "listFaces", "The user's templates with the quality measured at enrollment (never the embedding)",
                  answers: [.ok(FacePage.self, "The templates")]) { request, context in
            .json(FacePage(items: try await userAdministration.faces(of: try request.uuidParameter("userId"), app: context.caller.id)))
        }
        faces.add("DELETE", "/v1/apps/{appId}/users/{userId}/faces/{templateId}", "deleteFace", "Delete one template; gone from storage and every matcher",
                  answers: [.noContent("Deleted")], because: [.notFound: "no such app, or no such template of that user"]) { request, context in
            let (app, userId, templateId) = (context.caller, try request.uuidParameter("userId"), try request.uuidParameter("templateId"))
            return try await context.recorded(kind: "face.delete", appId: app.id) { draft in
                try await userAdministration.eraseFace(templateId, of: userId, app: app.id, draft: &draft)
                return .noContent
            }
        }
        users.add("POST", "/v1/apps/{appId}/devices/{deviceId}/reset", "resetDevice", "Clear a device's failed-attempt counters and lock", answers: [.noContent("Reset")]) { request, context in
            guard let device = request.pathParameters["deviceId"], !device.isEmpty else { throw APIError(.notFound, "no such device") }
            return try await context.recorded(kind: "device.reset", appId: context.caller.id, deviceId: device) { _ in
                try await userAdministration.resetDevice(device, app: context.caller.id)
                return .noContent
            }
        }
        users.add("POST", "/v1/apps/{appId}/users/{userId}/reset", "resetUserBinding", "Clear the lock on binding new devices to a user (set after repeated wrong employee numbers)", answers: [.noContent("Reset")]) { request, context in
            let (app, userId) = (context.caller, try request.uuidParameter("userId"))
            return try await context.recorded(kind: "user.reset", appId: app.id) { draft in
                try await userAdministration.resetBinding(of: userId, app: app.id, draft: &draft)
                return .noContent
            }
        }
    }

    struct AppPage: Codable, DocumentedSchema {
        static let schemaName = "AppList"
        var items: [AppRecord.Public]
    }

    /// `{"previousSecretValidFor": seconds}` (optional; an empty body takes the default grace).
    struct RotateSecret: Decodable, DocumentedSchema { var previousSecretValidFor: Int? }

    struct NewUser: Decodable, DocumentedSchema {
        var employeeNumber: String
        var name: String
    }

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

    struct Enrolled: Codable, DocumentedSchema {
        static let schemaName = "EnrolledFace"
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

    struct FacePage: Codable, DocumentedSchema {
        static let schemaName = "FaceTemplateList"
        var items: [FaceView]
    }
}
