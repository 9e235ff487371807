import FaceGateCore
import Foundation
import HTTPServer

/// Face comparisons without a login over HTTP (the decisions are `FaceComparison`'s): 1:1 verify (`/v1/face-verify`) and
/// 1:N search of an app (`/v1/apps/{appId}/faces/search`), each recorded as a transaction.
struct FaceVerifyRoutes: RouteCollection {
    let faceComparison: FaceComparison
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        routes.group(\.appServerOrClient, tag: .faceLogin).add("POST", "/v1/face-verify", "verifyFace", """
            1:1: is this photo the claimed user (userId or employeeNumber, as multipart fields or query parameters)? Throttled per \
            claimed user like face login. The client app learns only match; the app server also gets the score
            """, body: .upload(form: VerifyUpload.self),
            parameters: [Parameter(name: "userId", schema: ["type": "string", "format": "uuid"]), Parameter(name: "employeeNumber", schema: ["type": "string"])],
            answers: [.ok(VerifyAnswer.self, "The decision")],
            errors: [.moduleDisabled, .moduleNotFormal, .notFound, .noFace, .imageFormatError, .lowQuality, .credentialLocked],
            because: [.invalidRequest: "no claimed user, or no X-Device-Id on a header app",
                      .notFound: "the app server named an unknown user (a client gets match false instead)",
                      .credentialLocked: "too many failed attempts on the claimed user or the device"],
            doors: [.clientFaceVerify, .appServerFaceVerify]) { request, context in
            try await verify(request, context)
        }
        routes.group(\.appServerOrOperator, tag: .faces).add("POST", "/v1/apps/{appId}/faces/search", "searchFaces", """
            1:N search of the app's gallery without a login: the decision at the app's operating point, and for operators the closest \
            candidates
            """, body: .upload(form: ImageUpload.self),
            parameters: [Parameter(name: "limit", schema: ["type": "integer", "minimum": 1, "maximum": 20, "default": 5],
                                   description: "How many candidates (operators)")],
            answers: [.ok(SearchAnswer.self, "The search result")],
            errors: [.moduleDisabled, .moduleNotFormal, .noFace, .imageFormatError, .lowQuality],
            because: [.invalidRequest: "limit out of 1–20, a malformed multipart body"], doors: [.faceSearch]) { request, context in
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
    struct VerifyAnswer: Codable, TrustAnswer, DocumentedSchema {
        static let schemaName = "FaceVerification"
        var match: Bool
        var transactionId: String
        var userId: String?
        var score: Float?
        var threshold: Float?
        var model: FaceModel?
    }

    /// A search's decision, and for operators its best candidates.
    struct SearchAnswer: Codable, TrustAnswer, DocumentedSchema {
        static let schemaName = "FaceSearchResult"
        struct Hit: Codable, DocumentedSchema {
            static let schemaName = "FaceSearchCandidate"
            var userId: String
            var employeeNumber: String
            var score: Float
        }
        var outcome: FaceOutcome
        var match: Hit?
        var model: FaceModel
        var threshold: Float
        var transactionId: String
        var candidates: [Hit]?
    }
}
