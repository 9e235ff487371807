import FaceGateCore
import Foundation
import HTTPServer

/// The face-model migration's routes (`FaceModelMigration`): an operator reads how many users are ready, has kept
/// photos re-embedded, and switches the app.
struct FaceModelMigrationRoutes: RouteCollection {
    let faceModelMigration: FaceModelMigration

    func boot(_ routes: APIRoutes) {
        let operators = routes.group(\.appOperator)
        operators.add("GET", "/v1/apps/{appId}/face-model-migration", answers: [FaceModelMigration.Status.self]) { request, context in
            .json(try await faceModelMigration.status(context.caller, to: try FaceModelMigration.target(request.query["to"])))
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration", answers: [FaceModelMigration.Switched.self], maxBodyBytes: 4096) { request, context in
            let app = context.caller
            struct Body: Decodable {
                var to: FaceModel
                /// In the new model's units; its default otherwise.
                var matchThreshold: Float?
            }
            let body = try request.decodeJSON(Body.self)
            let plan = try FaceModelMigration.plan(app, to: body.to, matchThreshold: body.matchThreshold)
            return try await context.recorded(kind: "app.face-model.switch", appId: app.id) { draft in
                .json(try await faceModelMigration.switchModel(app, plan, draft: &draft))
            }
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration/re-embed", answers: [FaceModelMigration.Reembedded.self], maxBodyBytes: 4096) { request, context in
            let app = context.caller
            struct Body: Decodable {
                var to: FaceModel?
                /// Continue after this kept photo's template (the `next` of an answer that ran out of time).
                var after: UUID?
            }
            let body = try request.decodeJSON(Body.self)
            let target = try FaceModelMigration.reembedTarget(app, to: body.to)
            return try await context.recorded(kind: "face.migrate.re-embed", appId: app.id) { draft in
                .json(try await faceModelMigration.reembed(app, to: target, after: body.after, draft: &draft))
            }
        }
    }
}
