import FaceGateCore
import Foundation
import HTTPServer

/// The face-model migration's routes (`FaceModelMigration`): an operator reads how many users are ready, has kept
/// photos re-embedded, and switches the app.
struct FaceModelMigrationRoutes: RouteCollection {
    let faceModelMigration: FaceModelMigration

    func boot(_ routes: APIRoutes) {
        let operators = routes.group(\.appOperator, tag: .apps)
        operators.add("GET", "/v1/apps/{appId}/face-model-migration", "getFaceModelMigration",
                      "How many users are ready for the app's move to another face model, and who is not",
                      parameters: [Parameter(name: "to", schema: ["$ref": "#/components/schemas/FaceModel"],
                                             description: "The target model; sface-2021dec by default")],
                      answers: [.ok(FaceModelMigration.Status.self, "The migration's state")]) { request, context in
            .json(try await faceModelMigration.status(context.caller, to: try FaceModelMigration.target(request.query["to"])))
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration", "switchFaceModel",
                      "Switch the app to another face model, in one step: from then on it matches only that model's templates",
                      body: .json(Switch.self), answers: [.ok(FaceModelMigration.Switched.self, "The app as switched, and who still needs a new enrollment")],
                      errors: [.conflict],
                      because: [.conflict: "the app already uses that model, its kiosk approval does not fit the new model, or it changed meanwhile"],
                      maxBodyBytes: 4096) { request, context in
            let app = context.caller
            let body = try request.decodeJSON(Switch.self)
            let plan = try FaceModelMigration.plan(app, to: body.to, matchThreshold: body.matchThreshold)
            return try await context.recorded(kind: "app.face-model.switch", appId: app.id) { draft in
                .json(try await faceModelMigration.switchModel(app, plan, draft: &draft))
            }
        }
        operators.add("POST", "/v1/apps/{appId}/face-model-migration/re-embed", "reembedKeptPhotos",
                      "Make target-model templates from the kept enrollment photos of the users not ready yet (before the switch)",
                      body: .json(Reembed.self), answers: [.ok(FaceModelMigration.Reembedded.self, "What became of each kept photo, and the migration's state")],
                      errors: [.conflict],
                      because: [.conflict: "the app already uses the target model, or the target is not the model apps move to (sface-2021dec)"],
                      maxBodyBytes: 4096) { request, context in
            let app = context.caller
            let body = try request.decodeJSON(Reembed.self)
            let target = try FaceModelMigration.reembedTarget(app, to: body.to)
            return try await context.recorded(kind: "face.migrate.re-embed", appId: app.id) { draft in
                .json(try await faceModelMigration.reembed(app, to: target, after: body.after, draft: &draft))
            }
        }
    }

    struct Switch: Decodable, DocumentedSchema {
        static let schemaName = "FaceModelSwitch"
        var to: FaceModel
        /// In the new model's units; its default otherwise.
        var matchThreshold: Float?
    }

    struct Reembed: Decodable, DocumentedSchema {
        static let schemaName = "FaceModelReembed"
        var to: FaceModel?
        /// Continue after this kept photo's template (the `next` of an answer that ran out of time).
        var after: UUID?
    }
}
