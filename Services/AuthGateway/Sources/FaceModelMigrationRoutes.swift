import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// The face-model migration's routes (`FaceModelMigration`): an operator reads how many users are ready, has kept
/// photos re-embedded, and switches the app.
extension GatewayContext {
    func registerFaceModelMigrationRoutes(on router: APIRoutes) {
        let operators = router.group(appOperator)
        operators.add("GET", "/v1/apps/{appId}/face-model-migration", answers: [FaceModelMigration.Status.self]) { [self] request, app in
            .json(try await faceModelMigration.status(app, to: try FaceModelMigration.target(request.query["to"])))
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration", answers: [FaceModelMigration.Switched.self], maxBodyBytes: 4096) { [self] request, app in
            struct Body: Decodable {
                var to: FaceModel
                /// In the new model's units; its default otherwise.
                var matchThreshold: Float?
            }
            let body = try request.decodeJSON(Body.self)
            let plan = try FaceModelMigration.plan(app, to: body.to, matchThreshold: body.matchThreshold)
            return try await recorded(request, kind: "app.face-model.switch", appId: app.id) { draft in
                .json(try await faceModelMigration.switchModel(app, plan, draft: &draft))
            }
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration/re-embed", answers: [FaceModelMigration.Reembedded.self], maxBodyBytes: 4096) { [self] request, app in
            struct Body: Decodable {
                var to: FaceModel?
                /// Continue after this kept photo's template (the `next` of an answer that ran out of time).
                var after: UUID?
            }
            let body = try request.decodeJSON(Body.self)
            let target = try FaceModelMigration.reembedTarget(app, to: body.to)
            return try await recorded(request, kind: "face.migrate.re-embed", appId: app.id) { draft in
                .json(try await faceModelMigration.reembed(app, to: target, after: body.after, draft: &draft))
            }
        }
    }

    var faceModelMigration: FaceModelMigration { FaceModelMigration(store: migration, apps: apps, matcher: self) }

    /// Enrolls the probe of a confident login with the model the app moves to (`FaceModelMigration.reenroll`), in the
    /// background: a failure only leaves the user not ready yet.
    func reenroll(app: AppRecord, user: UUID, image: Data, target: FaceModel) {
        Task { [self] in
            do {
                guard let record = try await faceModelMigration.reenroll(app: app, user: user, image: image, target: target) else { return }
                try await transactions.append(record)
            } catch {
                logger.warning("re-enrollment for the model migration failed", ["app.id": app.id.wire, "error": "\(error)"])
            }
        }
    }
}
