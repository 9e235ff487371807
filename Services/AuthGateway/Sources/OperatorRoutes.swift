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
        router.group(globalOperator).add("POST", "/v1/apps", idempotent: true) { [self] request, _ in try await createApp(request) }
        router.group(anyOperator).add("GET", "/v1/apps") { [self] _, scope in try await listApps(scope: scope) }
        let operators = router.group(appOperator)
        operators.add("GET", "/v1/apps/{appId}") { _, app in .json(app.publicView) }
        operators.add("PATCH", "/v1/apps/{appId}") { [self] request, app in try await patchApp(request, app: app) }
        operators.add("POST", "/v1/apps/{appId}/secret") { [self] request, app in try await rotateSecret(request, app: app) }
        operators.add("POST", "/v1/apps/{appId}/users", idempotent: true) { [self] request, app in try await createUser(request, app: app) }
        operators.add("GET", "/v1/apps/{appId}/users") { [self] request, app in try await listUsers(request, app: app) }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}") { [self] request, app in
            .json(try await user(try request.uuidParameter("userId"), app: app.id))
        }
        operators.add("DELETE", "/v1/apps/{appId}/users/{userId}") { [self] request, app in try await deleteUser(request, app: app) }
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/faces", idempotent: true, upload: true) { [self] request, app in
            try await enrollFace(request, app: app)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/faces") { [self] request, app in try await listFaces(request, app: app) }
        operators.add("DELETE", "/v1/apps/{appId}/users/{userId}/faces/{templateId}") { [self] request, app in
            try await deleteFace(request, app: app)
        }
        operators.add("POST", "/v1/apps/{appId}/devices/{deviceId}/reset") { [self] request, app in try await resetDevice(request, app: app) }
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/reset") { [self] request, app in
            try await resetUserBinding(request, app: app)
        }
    }

    func existingApp(_ request: HTTPRequest) async throws -> AppRecord {
        guard let app = try await apps.find(try request.uuidParameter("appId")) else { throw APIError(.notFound, "no such app") }
        return app
    }

    struct CreateAppBody: Decodable {
        var name: String
        var modules: ModulesPatch?
        var faceModel: FaceModel?
        var matchThreshold: Float?
        var falseMatchRate: Double?
        var liveness: LivenessPolicy?
        var deviceBinding: DeviceBinding?
        var deviceBindingPolicy: DeviceBindingPolicy?
        var kioskApproval: KioskApprovalPolicy?
        var quotas: Quotas?
        var keepEnrollmentPhotos: Bool?
    }

    struct CreatedApp: Encodable {
        var appId: String
        var name: String
        var appSecret: String
        var ctidKey: String
        var modules: Modules
        var faceModel: FaceModel
        var matchThreshold: Float
        var estimatedFalseMatchRate: Double?
        var liveness: LivenessPolicy
        var deviceBinding: DeviceBinding
        var deviceBindingPolicy: DeviceBindingPolicy
        var kioskApproval: KioskApprovalPolicy
        var quotas: Quotas
        var keepEnrollmentPhotos: Bool
    }

    func createApp(_ request: HTTPRequest) async throws -> HTTPResponse {
        let body = try request.decodeJSON(CreateAppBody.self)
        let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(name.count) else { throw APIError(.invalidRequest, "name must be 1–200 characters") }
        let faceModel = body.faceModel ?? FaceModel.defaultForNewApps
        let threshold = try Self.threshold(body.matchThreshold, falseMatchRate: body.falseMatchRate, model: faceModel,
                                           otherwise: faceModel.defaultThreshold)
        let appId = UUID()
        let secret = newSecret(prefix: "fgs_")
        // The institution key is shown once and stored sealed to the ctid-verifier's public key: the
        // gateway can seal it but never open it again.
        let ctidKey = SecureRandom.bytes(16)
        let modules = (body.modules ?? ModulesPatch()).applied(to: .initial)
        let liveness = body.liveness ?? .initial
        let approval = body.kioskApproval ?? KioskApprovalPolicy()
        if let problem = approval.validationError(model: faceModel) { throw APIError(.invalidRequest, problem) }
        let quotas = body.quotas ?? .initial
        // New apps identify devices by their keys and bind a new key only with the app server's ticket.
        let binding = body.deviceBinding ?? .dpop
        let policy = body.deviceBindingPolicy ?? .appServerTicket
        let keepPhotos = body.keepEnrollmentPhotos ?? false
        return try await recorded(request, kind: "app.create", appId: platformAppId) { draft in
            let settings = AppSettings(modules: modules, matchThreshold: threshold, liveness: liveness, deviceBinding: binding,
                                       deviceBindingPolicy: policy, kioskApproval: approval, quotas: quotas, keepEnrollmentPhotos: keepPhotos)
            try await apps.create(appId, name: name, secretHash: SHA256.hash(Array(secret.utf8)),
                                  ctidKeySealed: try CTIDKeyBox.seal(ctidKey, appId: appId, to: configuration.ctidPublicKey),
                                  faceModel: faceModel, settings: settings)
            draft.detail = ["appId": appId.uuidString.lowercased(), "keepEnrollmentPhotos": String(keepPhotos)]
            return .json(CreatedApp(appId: appId.wire, name: name, appSecret: secret, ctidKey: Data(ctidKey).base64EncodedString(), modules: modules,
                                    faceModel: faceModel, matchThreshold: threshold,
                                    estimatedFalseMatchRate: faceModel.falseMatchRate(atThreshold: threshold), liveness: liveness, deviceBinding: binding,
                                    deviceBindingPolicy: policy, kioskApproval: approval, quotas: quotas, keepEnrollmentPhotos: keepPhotos),
                         status: 201)
        }
    }

    /// A threshold is in the units of the app's face model: Euclidean distance (for SFace, whose vectors have
    /// unit length, 1 − d²/2 is the cosine similarity).
    /// The app's threshold: a raw one in the model's units, or the one the model's calibration gives a target
    /// false-match rate; `otherwise` when neither is sent.
    static func threshold(_ raw: Float?, falseMatchRate: Double?, model: FaceModel, otherwise: Float) throws -> Float {
        if let falseMatchRate {
            guard raw == nil else { throw APIError(.invalidRequest, "send matchThreshold or falseMatchRate, not both") }
            guard let threshold = model.threshold(forFalseMatchRate: falseMatchRate) else {
                throw APIError(.invalidRequest, "falseMatchRate must be between 1e-8 and 1e-3 (a per-comparison rate, e.g. 1e-5 for 1 in 100,000)")
            }
            return threshold
        }
        let threshold = raw ?? otherwise
        try checkThreshold(threshold, model: model)
        return threshold
    }

    static func checkThreshold(_ threshold: Float, model: FaceModel) throws {
        let range = model.thresholdRange
        guard range.contains(threshold) else {
            throw APIError(.invalidRequest, "matchThreshold must be between \(range.lowerBound) and \(range.upperBound) for \(model.rawValue) "
                           + "(Euclidean distance between its vectors; \(model.defaultThreshold) by default)")
        }
    }

    func listApps(scope: OperatorScope) async throws -> HTTPResponse {
        struct Page: Encodable { var items: [AppRecord.Public] }
        return .json(Page(items: try await apps.all(covered: scope.covers).map(\.publicView)))
    }

    struct PatchAppBody: Decodable {
        var modules: ModulesPatch?
        var matchThreshold: Float?
        var falseMatchRate: Double?
        var liveness: LivenessPolicy?
        var deviceBinding: DeviceBinding?
        var deviceBindingPolicy: DeviceBindingPolicy?
        var kioskApproval: KioskApprovalPolicy?
        var quotas: Quotas?
        /// Turning it off keeps the photos already kept; they go with their templates.
        var keepEnrollmentPhotos: Bool?
    }

    func patchApp(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(PatchAppBody.self)
        return try await recorded(request, kind: "app.update", appId: app.id) { draft in
            let modules = (body.modules ?? ModulesPatch()).applied(to: app.modules)
            let threshold = try Self.threshold(body.matchThreshold, falseMatchRate: body.falseMatchRate, model: app.faceModel,
                                               otherwise: app.matchThreshold)
            let liveness = body.liveness ?? app.liveness
            let binding = body.deviceBinding ?? app.deviceBinding
            let policy = body.deviceBindingPolicy ?? app.deviceBindingPolicy
            let approval = body.kioskApproval ?? app.kioskApproval
            if let problem = approval.validationError(model: app.faceModel) { throw APIError(.invalidRequest, problem) }
            let quotas = body.quotas ?? app.quotas
            guard quotas.dailyCalls >= 0, quotas.gallerySize >= 0 else { throw APIError(.invalidRequest, "quotas must not be negative") }
            try await apps.update(app.id, settings: AppSettings(
                modules: modules, matchThreshold: threshold, liveness: liveness, deviceBinding: binding, deviceBindingPolicy: policy,
                kioskApproval: approval, quotas: quotas, keepEnrollmentPhotos: body.keepEnrollmentPhotos ?? app.keepEnrollmentPhotos))
            draft.detail = ["modules": modules.jsonText, "deviceBinding": binding.rawValue, "deviceBindingPolicy": policy.rawValue,
                            "keepEnrollmentPhotos": String(body.keepEnrollmentPhotos ?? app.keepEnrollmentPhotos)]
            guard let updated = try await apps.find(app.id) else { throw APIError(.notFound, "no such app") }
            return .json(updated.publicView)
        }
    }

    /// New secret now; the old one keeps working for the grace period so app servers can roll over.
    func rotateSecret(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let secret = newSecret(prefix: "fgs_")
        return try await recorded(request, kind: "app.secret.rotate", appId: app.id) { _ in
            try await apps.rotateSecret(app.id, to: SHA256.hash(Array(secret.utf8)), graceSeconds: configuration.secretGraceSeconds)
            struct Rotated: Encodable { var appId: String; var appSecret: String; var previousSecretValidForSeconds: Int }
            return .json(Rotated(appId: app.id.wire, appSecret: secret, previousSecretValidForSeconds: configuration.secretGraceSeconds), status: 201)
        }
    }

    func user(_ userId: UUID, app appId: UUID) async throws -> UserView {
        guard let user = try await roster.user(userId, appId: appId) else { throw APIError(.notFound, "no such user in this app") }
        return user
    }

    struct CreateUserBody: Decodable { var employeeNumber: String; var name: String }

    func createUser(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(CreateUserBody.self)
        return try await recorded(request, kind: "user.create", appId: app.id) { draft in
            let number = body.employeeNumber.trimmingCharacters(in: .whitespaces)
            let name = body.name.trimmingCharacters(in: .whitespaces)
            guard (1...64).contains(number.count), (1...200).contains(name.count) else {
                throw APIError(.invalidRequest, "employeeNumber must be 1–64 and name 1–200 characters")
            }
            let userId = UUID()
            guard try await roster.create(userId, appId: app.id, employeeNumber: number, name: name) else {
                throw APIError(.conflict, "employee number \(number) already exists in this app")
            }
            draft.userId = userId
            struct Created: Encodable { var userId: String; var employeeNumber: String; var name: String }
            return .json(Created(userId: userId.wire, employeeNumber: number, name: name), status: 201)
        }
    }

    /// Cursor pages ordered by creation; the cursor is opaque (base64url of the last row's position).
    func listUsers(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let limit = min(max(Int(request.query["limit"] ?? "") ?? 50, 1), 500)
        let after = try PageCursor.decode(request.query["cursor"])
        var items = try await roster.page(appId: app.id, after: after, limit: limit + 1)
        var next: String?
        if items.count > limit {
            items.removeLast()
            next = PageCursor(time: items.last!.createdAt, id: UUID(uuidString: items.last!.userId)!).encoded
        }
        struct Page: Encodable { var items: [UserView]; var nextCursor: String? }
        return .json(Page(items: items, nextCursor: next))
    }

    /// Erases the user, their templates (tombstoned and broadcast so every matcher drops them) and devices.
    func deleteUser(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        return try await recorded(request, kind: "user.delete", appId: app.id) { draft in
            draft.userId = userId
            guard let removed = try await roster.erase(userId, appId: app.id) else { throw APIError(.notFound, "no such user in this app") }
            for change in removed { await broadcast(change) }
            draft.detail = ["templatesErased": String(removed.count)]
            return .noContent
        }
    }

    /// The enroll job's id when the request carries an `Idempotency-Key`: the same caller, key and user always give the
    /// same id, so a retry after an answer was lost (a 503 at the deadline while the matcher still finished) gets the
    /// matcher's record of the first job — the same template — instead of a second template of the same face.
    static func enrollJobId(_ request: HTTPRequest, appId: UUID, userId: UUID) -> String? {
        guard let key = request.headers[IdempotentRequests.header] else { return nil }
        let digest = SHA256.hash("facegate-enroll-v1\n\(request.headers["Authorization"] ?? "")\n\(appId.wire)\n\(userId.wire)\n\(key)")
        return "enroll-" + digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    var enrollment: Enrollment { Enrollment(roster: roster, matcher: self, maxFacesPerUser: configuration.maxFacesPerUser) }

    func enrollFace(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        return try await recorded(request, kind: "face.enroll", appId: app.id) { draft in
            let enrolled = try await enrollment.enroll(app: app, user: userId, image: { Data(try image(request)) },
                                                       photoConsent: { try Self.photoConsent(request) },
                                                       jobId: Self.enrollJobId(request, appId: app.id, userId: userId), draft: &draft)
            struct Enrolled: Encodable { var templateId: String; var quality: FaceQualityReport; var photoKept: Bool }
            return .json(Enrolled(templateId: enrolled.templateId.wire, quality: enrolled.quality, photoKept: enrolled.photoKept), status: 201)
        }
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

    /// The user's enrolled templates with the quality measured at enrollment (never the embedding).
    func listFaces(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        _ = try await user(userId, app: app.id)
        struct Page: Encodable { var items: [FaceView] }
        return .json(Page(items: try await roster.faces(of: userId, appId: app.id)))
    }

    /// Deletes one template: tombstoned and broadcast like a user's erasure, so every matcher drops it.
    func deleteFace(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        let templateId = try request.uuidParameter("templateId")
        return try await recorded(request, kind: "face.delete", appId: app.id) { draft in
            draft.userId = userId
            draft.detail = ["templateId": templateId.wire]
            guard let change = try await roster.eraseFace(templateId, of: userId, appId: app.id) else { throw APIError(.notFound, "no such face template of this user") }
            await broadcast(change)
            return .noContent
        }
    }

    /// Tells every matcher about a template change; one that misses it catches up at its next reconciliation.
    func broadcast(_ change: GalleryChange) async {
        do {
            _ = try await producer.send(KafkaRecord(topic: runtime.topics.galleryChanges, key: Array(change.templateId.uuidString.lowercased().utf8),
                                                    value: try FaceGateJSON.encode(change)))
        } catch {
            logger.warning("gallery change not broadcast; matchers apply it at their next reconciliation", ["error": "\(error)"])
        }
    }

    func resetDevice(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        guard let device = request.pathParameters["deviceId"], !device.isEmpty else { throw APIError(.notFound, "no such device") }
        return try await recorded(request, kind: "device.reset", appId: app.id, deviceId: device) { _ in
            try await attempts.reset(appId: app.id, .device(device))
            return .noContent
        }
    }

    /// Clears the lock on binding new devices to a user, set after repeated wrong employee numbers.
    func resetUserBinding(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        return try await recorded(request, kind: "user.reset", appId: app.id) { draft in
            draft.userId = userId
            try await attempts.reset(appId: app.id, .bindingUser(userId))
            return .noContent
        }
    }
}

/// Opaque cursor for keyset pagination: base64url of `<unix micros>:<uuid>`.
struct PageCursor {
    var time: Date
    var id: UUID

    var encoded: String {
        Base64URL.encode(Array("\(Int64((time.timeIntervalSince1970 * 1_000_000).rounded())):\(id.uuidString.lowercased())".utf8))
    }

    static func decode(_ text: String?) throws -> PageCursor? {
        guard let text, !text.isEmpty else { return nil }
        guard let bytes = Base64URL.decode(text), let plain = String(bytes: bytes, encoding: .utf8),
              let colon = plain.firstIndex(of: ":"), let micros = Int64(plain[..<colon]),
              let id = UUID(uuidString: String(plain[plain.index(after: colon)...])) else {
            throw APIError(.invalidRequest, "cursor is not one this API issued")
        }
        return PageCursor(time: Date(timeIntervalSince1970: Double(micros) / 1_000_000), id: id)
    }
}
