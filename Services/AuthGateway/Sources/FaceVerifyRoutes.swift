import FaceGateCore
import Foundation
import HTTPServer

/// Face comparisons without a login over HTTP (the decisions are `FaceComparison`'s): 1:1 verify (`/v1/face-verify`) and
/// 1:N search of an app (`/v1/apps/{appId}/faces/search`), each recorded as a transaction.
struct FaceVerifyRoutes: RouteCollection {
    let faceComparison: FaceComparison
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        routes.group(\.appServerOrClient).add("POST", "/v1/face-verify", answers: [VerifyAnswer.self], doors: [.clientFaceVerify, .appServerFaceVerify],
                                              upload: true) { request, context in
            try await verify(request, context)
        }
        routes.group(\.appServerOrOperator).add("POST", "/v1/apps/{appId}/faces/search", answers: [SearchAnswer.self], doors: [.faceSearch],
                                                upload: true) { request, context in
            try await search(request, context)
        }
    }

    /// A client app learns only `match`; the app server (HTTP Basic) also the user, the distance in the model's units,
    /// the threshold and the model (`FaceComparison.verify`).
    private func verify(_ request: HTTPRequest, _ context: CallContext<AppCaller>) async throws -> HTTPResponse {
        let (app, isAppServer) = (context.caller.app, context.caller.isAppServer)
        return try await context.recorded(kind: "face.verify", appId: app.id) { draft in
            var verifier = FaceComparison.Verifier.appServer
            if !isAppServer {
                let device = try await devices.device(request, app: app)
                draft.note(device)
                verifier = .client(device: device, address: context.clientAddress)
            }
            let verdict = try await faceComparison.verify(app: app, by: verifier, image: { try request.image() },
                                                          claim: { try Self.claim(request) }, draft: &draft)
            var answer = VerifyAnswer(match: verdict.match, transactionId: draft.id.wire)
            if isAppServer {
                answer.userId = verdict.userId?.wire
                answer.score = verdict.distance
                answer.threshold = app.matchThreshold
                answer.model = app.faceModel
            }
            return .json(answer)
        }
    }

    /// The user a verify call names: `userId` or `employeeNumber`, as a multipart field or a query parameter.
    private static func claim(_ request: HTTPRequest) throws -> FaceComparison.Claim {
        var fields = request.query
        if request.isMultipart {
            for part in try request.multipartParts() where ["userId", "employeeNumber"].contains(part.name) {
                fields[part.name] = String(decoding: part.body, as: UTF8.self)
            }
        }
        return FaceComparison.Claim(userId: fields["userId"], employeeNumber: fields["employeeNumber"])
    }

    /// Operators see up to `limit` (1–20, default 5) best candidates, one per user; the app server sees only the decision.
    private func search(_ request: HTTPRequest, _ context: CallContext<AppCaller>) async throws -> HTTPResponse {
        let (app, isAppServer) = (context.caller.app, context.caller.isAppServer)
        let limit = try request.query["limit"].map { text in
            guard let value = Int(text), (1...20).contains(value) else { throw APIError(.invalidRequest, "limit must be 1–20") }
            return value
        } ?? 5
        return try await context.recorded(kind: "face.search", appId: app.id) { draft in
            let search = try await faceComparison.search(app: app, forAppServer: isAppServer, limit: limit,
                                                         image: { try request.image() }, draft: &draft)
            func hit(_ hit: FaceComparison.Hit) -> SearchAnswer.Hit {
                SearchAnswer.Hit(userId: hit.userId.wire, employeeNumber: hit.employeeNumber, score: hit.distance)
            }
            return .json(SearchAnswer(outcome: search.outcome, match: search.match.map(hit), model: app.faceModel, threshold: app.matchThreshold,
                                      transactionId: draft.id.wire, candidates: isAppServer ? nil : search.candidates.map(hit)))
        }
    }

    /// A verify's verdict: the client learns only `match`.
    struct VerifyAnswer: Encodable, TrustAnswer {
        var match: Bool
        var transactionId: String
        var userId: String?
        var score: Float?
        var threshold: Float?
        var model: FaceModel?
    }

    /// A search's decision, and for operators its best candidates.
    struct SearchAnswer: Encodable, TrustAnswer {
        struct Hit: Encodable { var userId: String; var employeeNumber: String; var score: Float }
        var outcome: FaceOutcome
        var match: Hit?
        var model: FaceModel
        var threshold: Float
        var transactionId: String
        var candidates: [Hit]?
    }
}
