import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// Moving an app to a newer face model without asking everyone to come back. While an app is on an older model,
/// each confident face login on a device bound to the user embeds the same probe with the new model too and keeps
/// it as that user's new-model template (the photo itself is not kept): progressive re-enrollment. The operator
/// watches the share of users ready and switches the app when it suffices; the users still without a template of
/// the new model are listed, to be enrolled again. Apps that keep enrollment photos (with each person's consent) can
/// have the matcher re-embed them all at once instead.
extension GatewayContext {
    func registerFaceModelMigrationRoutes(on router: APIRoutes) {
        let operators = router.group(appOperator)
        operators.add("GET", "/v1/apps/{appId}/face-model-migration") { [self] request, app in
            .json(try await migrationStatus(app, to: try targetModel(request.query["to"])))
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration", maxBodyBytes: 4096) { [self] request, app in
            try await switchFaceModel(request, app: app)
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration/re-embed", maxBodyBytes: 4096) { [self] request, app in
            try await reembedKeptPhotos(request, app: app)
        }
    }

    struct MigrationStatus: Encodable {
        struct Pending: Encodable {
            var userId: String
            var employeeNumber: String
            /// The user has a kept enrollment photo: `…/re-embed` can make the new template without them.
            var keptPhoto: Bool
        }
        var appId: String
        var from: FaceModel
        var to: FaceModel
        /// Users holding a template of the app's current model.
        var users: Int
        /// Of those, the ones that also hold a template of `to`.
        var ready: Int
        var readyShare: Double
        /// Of the users not ready, the ones with a kept enrollment photo.
        var keptPhotos: Int
        /// Up to 1,000 of the users not ready, oldest first: they need a new enrollment (or a login) before a switch.
        var notReady: [Pending]
    }

    func targetModel(_ text: String?) throws -> FaceModel {
        guard let text else { return FaceModel.defaultForNewApps }
        guard let model = FaceModel(rawValue: text) else {
            throw APIError(.invalidRequest, "to must be one of \(FaceModel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return model
    }

    func migrationStatus(_ app: AppRecord, to target: FaceModel) async throws -> MigrationStatus {
        let (users, ready, kept) = try await migration.counts(appId: app.id, from: app.faceModel, to: target)
        let pending = try await migration.pending(appId: app.id, from: app.faceModel, to: target, limit: 1000).map {
            MigrationStatus.Pending(userId: $0.id.wire, employeeNumber: $0.employeeNumber, keptPhoto: $0.keptPhoto)
        }
        return MigrationStatus(appId: app.id.wire, from: app.faceModel, to: target, users: users, ready: ready,
                               readyShare: users == 0 ? 1 : Double(ready) / Double(users), keptPhotos: kept, notReady: pending)
    }

    struct ReembedBody: Decodable {
        var to: FaceModel?
        /// Continue after this kept photo's template (the `next` of an answer that ran out of time).
        var after: UUID?
    }

    /// Re-embeds, with the model the app moves to, the kept enrollment photos of the users not ready for it: a page of
    /// photos per matcher job, for up to `reembedBudget`; then answers what became of each and, if photos remain,
    /// `next` to continue from. The photos stay in the matcher: this service can read only that they exist.
    func reembedKeptPhotos(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(ReembedBody.self)
        let target = body.to ?? FaceModel.defaultForNewApps
        guard target == FaceModel.defaultForNewApps, target != app.faceModel else {
            throw APIError(.conflict, "the app uses \(app.faceModel.rawValue); photos are re-embedded only for \(FaceModel.defaultForNewApps.rawValue), "
                           + "the model apps move to, and only before the switch")
        }
        return try await recorded(request, kind: "face.migrate.re-embed", appId: app.id) { draft in
            let started = ContinuousClock.now
            var after = body.after ?? UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
            var outcomes: [ReembedOutcome] = []
            var next: UUID?
            while true {
                let page = try await migration.keptPhotos(appId: app.id, from: app.faceModel, to: target, after: after, limit: Self.reembedPage)
                guard let last = page.last else { break }
                if ContinuousClock.now - started > Self.reembedBudget {
                    next = after
                    break
                }
                let result = try await faceJob(FaceJob(kind: .reembed, appId: app.id, duplicateCheck: false, model: target, templateIds: page))
                // A page not answered in time may still have been stored: calling again resumes after the last page answered.
                if result.outcome.errorCode != nil { throw APIError(refusing: result) }
                guard let done = result.reembedded else { throw APIError(.internalError, "the matcher did not re-embed") }
                outcomes += done
                after = last
            }
            let status = try await migrationStatus(app, to: target)
            let made = outcomes.filter { $0.templateId != nil }.count
            let refused = outcomes.filter { $0.outcome != .enrolled }
            draft.detail = ["to": target.rawValue, "reembedded": String(made), "refused": String(refused.count)]
            struct Refused: Encodable { var userId: String; var templateId: String; var error: String; var message: String? }
            struct Answer: Encodable {
                var reembedded: Int
                var refused: [Refused]
                var next: String?
                var status: MigrationStatus
            }
            return .json(Answer(reembedded: made,
                                refused: refused.map { Refused(userId: $0.userId.wire, templateId: $0.sourceTemplateId.wire,
                                                               error: ($0.outcome.errorCode ?? .internalError).rawValue, message: $0.message) },
                                next: next?.wire, status: status))
        }
    }

    /// Kept photos per matcher job (well inside a job's deadline), and how long one call goes on before answering with `next`.
    static let reembedPage = 4
    static let reembedBudget = Duration.seconds(30)

    struct SwitchBody: Decodable {
        var to: FaceModel
        /// In the new model's units; its default otherwise.
        var matchThreshold: Float?
    }

    /// Switches the app's face model (and its threshold) in one statement: from then on every job of the app runs on
    /// the new model and matches only its templates. Answers the app and who still needs a new enrollment.
    func switchFaceModel(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(SwitchBody.self)
        guard body.to != app.faceModel else { throw APIError(.conflict, "the app already uses \(body.to.rawValue)") }
        if let problem = app.kioskApproval.validationError(model: body.to) {
            throw APIError(.conflict, "the app's kiosk approval does not fit \(body.to.rawValue): \(problem); PATCH it first")
        }
        let threshold = try AppAdministration.threshold(body.matchThreshold, falseMatchRate: nil, model: body.to, otherwise: body.to.defaultThreshold)
        return try await recorded(request, kind: "app.face-model.switch", appId: app.id) { draft in
            let status = try await migrationStatus(app, to: body.to)
            guard try await apps.switchModel(app.id, from: app.faceModel, to: body.to, threshold: threshold) else { throw APIError(.conflict, "the app's face model changed meanwhile; look again") }
            draft.detail = ["from": app.faceModel.rawValue, "to": body.to.rawValue, "ready": String(status.ready), "users": String(status.users)]
            guard let updated = try await apps.find(app.id) else { throw APIError(.notFound, "no such app") }
            struct Switched: Encodable { var app: AppRecord.Public; var ready: Int; var users: Int; var notReady: [MigrationStatus.Pending] }
            return .json(Switched(app: updated.publicView, ready: status.ready, users: status.users, notReady: status.notReady))
        }
    }

    /// Enrolls `image`, the probe of a confident login (`FaceLogin`), with `target` for the user, once per user, in the
    /// background: a failure only leaves the user not ready yet.
    func reenroll(app: AppRecord, user: UUID, image: Data, target: FaceModel) {
        Task { [self] in
            do {
                guard try await !migration.holds(user, appId: app.id, model: target) else { return }
                let started = ContinuousClock.now
                let result = try await faceJob(FaceJob(kind: .enroll, appId: app.id, image: image, userId: user, duplicateCheck: false, model: target))
                let outcome = result.outcome == .enrolled ? "SUCCESS" : (result.outcome.errorCode?.rawValue ?? result.outcome.rawValue)
                try await transactions.append(TransactionRecord(
                    id: UUID(), appId: app.id, kind: "face.migrate", outcome: outcome, userId: user, deviceId: nil, clientIp: nil, score: nil,
                    latencyMs: Int((ContinuousClock.now - started).seconds * 1000),
                    detail: ["model": target.rawValue, "templateId": result.templateId?.wire ?? ""]))
            } catch {
                logger.warning("re-enrollment for the model migration failed", ["app.id": app.id.wire, "error": "\(error)"])
            }
        }
    }
}
