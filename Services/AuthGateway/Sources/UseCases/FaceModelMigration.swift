import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// Moving an app to a newer face model without asking everyone to come back (`/v1/apps/{appId}/face-model-migration…`),
/// without HTTP. While an app is on an older model, each confident face login on a device bound to the user embeds the
/// same probe with the new model too and keeps it as that user's new-model template (the photo itself is not kept):
/// progressive re-enrollment. The operator watches the share of users ready and switches the app when it suffices; the
/// users still without a template of the new model are listed, to be enrolled again. Apps that keep enrollment photos
/// (with each person's consent) can have the matcher re-embed them all at once instead.
struct FaceModelMigration: Sendable {
    let store: any ModelMigrationStore
    let apps: any AppStore
    let matcher: any FaceMatching
    /// Kept photos per matcher job (well inside a job's deadline).
    var reembedPage = 4
    /// How long one re-embedding call goes on before answering with `next`.
    var reembedBudget = Duration.seconds(30)

    struct Status: Codable, Sendable, Equatable {
        struct Pending: Codable, Sendable, Equatable {
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

    /// The model named by `?to=`, the one new apps get when absent.
    static func target(_ text: String?) throws -> FaceModel {
        guard let text else { return FaceModel.defaultForNewApps }
        guard let model = FaceModel(rawValue: text) else {
            throw APIError(.invalidRequest, "to must be one of \(FaceModel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return model
    }

    func status(_ app: AppRecord, to target: FaceModel) async throws -> Status {
        let (users, ready, kept) = try await store.counts(appId: app.id, from: app.faceModel, to: target)
        let pending = try await store.pending(appId: app.id, from: app.faceModel, to: target, limit: 1000).map {
            Status.Pending(userId: $0.id.wire, employeeNumber: $0.employeeNumber, keptPhoto: $0.keptPhoto)
        }
        return Status(appId: app.id.wire, from: app.faceModel, to: target, users: users, ready: ready,
                      readyShare: users == 0 ? 1 : Double(ready) / Double(users), keptPhotos: kept, notReady: pending)
    }

    struct Reembedded: Codable, Sendable {
        struct Refused: Codable, Sendable, Equatable { var userId: String; var templateId: String; var error: String; var message: String? }
        var reembedded: Int
        var refused: [Refused]
        /// Where to continue from when the call ran out of time with photos left.
        var next: String?
        var status: Status
    }

    /// The model kept photos are re-embedded with (`to`, the model new apps get when nil), checked before anything is
    /// recorded: `CONFLICT` unless it is the model new apps get and the app does not use it yet.
    static func reembedTarget(_ app: AppRecord, to: FaceModel?) throws -> FaceModel {
        let target = to ?? FaceModel.defaultForNewApps
        guard target == FaceModel.defaultForNewApps, target != app.faceModel else {
            throw APIError(.conflict, "the app uses \(app.faceModel.rawValue); photos are re-embedded only for \(FaceModel.defaultForNewApps.rawValue), "
                           + "the model apps move to, and only before the switch")
        }
        return target
    }

    /// Re-embeds, with `target` (`reembedTarget`), the kept enrollment photos of the users not ready for it: a page of
    /// photos per matcher job, for up to `reembedBudget`; then answers what became of each and, if photos remain,
    /// `next` to continue from. The photos stay in the matcher: this service can read only that they exist.
    func reembed(_ app: AppRecord, to target: FaceModel, after: UUID?, draft: inout TransactionDraft) async throws -> Reembedded {
        let started = ContinuousClock.now
        var after = after ?? UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        var outcomes: [ReembedOutcome] = []
        var next: UUID?
        while true {
            let page = try await store.keptPhotos(appId: app.id, from: app.faceModel, to: target, after: after, limit: reembedPage)
            guard let last = page.last else { break }
            if ContinuousClock.now - started > reembedBudget {
                next = after
                break
            }
            let result = try await matcher.match(FaceJob(appId: app.id, .reembed(model: target, templateIds: page)))
            // A page not answered in time may still have been stored: calling again resumes after the last page answered.
            if result.outcome.errorCode != nil { throw APIError(refusing: result) }
            guard let done = result.reembedded else { throw APIError(.internalError, "the matcher did not re-embed") }
            outcomes += done
            after = last
        }
        let made = outcomes.filter { $0.templateId != nil }.count
        let refused = outcomes.filter { $0.outcome != .enrolled }
        draft.detail = ["to": target.rawValue, "reembedded": String(made), "refused": String(refused.count)]
        return Reembedded(reembedded: made,
                          refused: refused.map { Reembedded.Refused(userId: $0.userId.wire, templateId: $0.sourceTemplateId.wire,
                                                                     error: ($0.outcome.errorCode ?? .internalError).rawValue, message: $0.message) },
                          next: next?.wire, status: try await status(app, to: target))
    }

    struct Switched: Codable, Sendable {
        var app: AppRecord.Public
        var ready: Int
        var users: Int
        var notReady: [Status.Pending]
    }

    /// A switch checked before anything is recorded.
    struct Switch: Sendable {
        var to: FaceModel
        var threshold: Float
    }

    /// The switch to `target` with its threshold (in the new model's units; its default when nil): `CONFLICT` when the
    /// app already uses it or its kiosk approval does not fit it, `INVALID_REQUEST` for a threshold out of range.
    static func plan(_ app: AppRecord, to target: FaceModel, matchThreshold: Float?) throws -> Switch {
        guard target != app.faceModel else { throw APIError(.conflict, "the app already uses \(target.rawValue)") }
        if let problem = app.kioskApproval.validationError(model: target) {
            throw APIError(.conflict, "the app's kiosk approval does not fit \(target.rawValue): \(problem); PATCH it first")
        }
        return Switch(to: target, threshold: try AppAdministration.threshold(matchThreshold, falseMatchRate: nil, model: target,
                                                                             otherwise: target.defaultThreshold))
    }

    /// Switches the app's face model and threshold in one statement: from then on every job of the app runs on the new
    /// model and matches only its templates. `CONFLICT` when the app's model changed since it was read.
    func switchModel(_ app: AppRecord, _ plan: Switch, draft: inout TransactionDraft) async throws -> Switched {
        let target = plan.to
        let status = try await status(app, to: target)
        guard try await apps.switchModel(app.id, from: app.faceModel, to: target, threshold: plan.threshold) else {
            throw APIError(.conflict, "the app's face model changed meanwhile; look again")
        }
        draft.detail = ["from": app.faceModel.rawValue, "to": target.rawValue, "ready": String(status.ready), "users": String(status.users)]
        guard let updated = try await apps.find(app.id) else { throw APIError(.notFound, "no such app") }
        return Switched(app: updated.publicView, ready: status.ready, users: status.users, notReady: status.notReady)
    }

    /// Enrolls `image`, the probe of a confident login (`FaceLogin`), with `target` for the user, unless they already
    /// hold a template of it. Answers the `face.migrate` transaction to record, nil when there was nothing to do.
    func reenroll(app: AppRecord, user: UUID, image: Data, target: FaceModel) async throws -> TransactionRecord? {
        guard try await !store.holds(user, appId: app.id, model: target) else { return nil }
        let started = ContinuousClock.now
        let result = try await matcher.match(FaceJob(appId: app.id, .enroll(FaceJob.Enrollment(image: image, userId: user, duplicateCheck: false, model: target))))
        let outcome = result.outcome == .enrolled ? "SUCCESS" : (result.outcome.errorCode?.rawValue ?? result.outcome.rawValue)
        return TransactionRecord(id: UUID(), appId: app.id, kind: "face.migrate", outcome: outcome, userId: user, deviceId: nil, clientIp: nil,
                                 score: nil, latencyMs: Int((ContinuousClock.now - started).seconds * 1000),
                                 detail: ["model": target.rawValue, "templateId": result.templateId?.wire ?? ""])
    }
}
