import FaceGateCore
import Foundation
import HTTPServer

/// Face comparisons without a login: 1:1 "is this photo user X?" (`/v1/face-verify`, Rekognition
/// CompareFaces / Azure Verify) and 1:N search of an app (`/v1/apps/{appId}/faces/search`, Rekognition
/// SearchFacesByImage). Both are audited, throttled and counted against the face-login module like a login.
extension GatewayContext {
    func registerFaceVerifyRoutes(on router: APIRoutes) {
        router.group(appServerOrClient).add("POST", "/v1/face-verify", upload: true) { [self] request, app in
            try await verifyFace(request, app: app)
        }
        router.group(appServerOrOperator).add("POST", "/v1/apps/{appId}/faces/search", upload: true) { [self] request, app in
            try await searchFaces(request, app: app)
        }
    }

    /// A client app (access token, device rules as face login) learns only yes or no: a score would let
    /// an attacker tune a face, and an unknown user gets the same `false` as a stranger's face (the probe is
    /// still embedded, so the time tells nothing either). The app server (HTTP Basic) also gets the
    /// distance in the model's units, and 404 for an unknown user.
    /// Charged like a binding attempt to the claimed user (shared with face-login confirmations, so the
    /// two cannot be alternated for more tries), and for clients to the device and the address.
    func verifyFace(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let isAppServer = Self.isAppServer(request)
        return try await recorded(request, kind: "face.verify", appId: app.id) { draft in
            var subjects: [AttemptGuard.Subject] = []
            if !isAppServer {
                let device = try await clientDevice(request, app: app)
                draft.note(device)
                subjects = [.device(device.id), .clientAddress(clientAddress(request))]
            }
            try await apps.admit(app, module: .faceLogin)
            let image = Data(try image(request))
            let claimed = try await claimedUser(request, app: app)
            draft.userId = claimed
            if let claimed { subjects.insert(.bindingUser(claimed), at: 0) }
            if isAppServer && claimed == nil { throw APIError(.notFound, "no such user in this app") }
            return try await attempts.attempt(appId: app.id, subjects) {
                // An unknown user is compared with nobody: a fresh id holds no template.
                let result = try await faceJob(FaceJob(kind: .verify, appId: app.id, image: image, userId: claimed ?? UUID(),
                                                       threshold: app.matchThreshold))
                guard result.outcome == .match || result.outcome == .noMatchFace else { throw APIError(refusing: result) }
                let match = result.outcome == .match && claimed != nil
                draft.score = result.candidates.first?.distance
                if !match { draft.outcome = ErrorCode.noMatchFace.rawValue }
                struct Answer: Encodable {
                    var match: Bool
                    var transactionId: String
                    var userId: String?
                    var score: Float?
                    var threshold: Float?
                    var model: FaceModel?
                }
                var answer = Answer(match: match, transactionId: draft.id.wire)
                if isAppServer {
                    answer.userId = claimed?.wire
                    answer.score = result.candidates.first?.distance
                    answer.threshold = app.matchThreshold
                    answer.model = app.faceModel
                }
                return (.json(answer), match ? .success : .failure)
            }
        }
    }

    /// The user a verify call names: `userId` or `employeeNumber`, as a multipart field or a query parameter.
    private func claimedUser(_ request: HTTPRequest, app: AppRecord) async throws -> UUID? {
        var fields = request.query
        if (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("multipart/form-data") {
            for part in try request.multipartParts() where ["userId", "employeeNumber"].contains(part.name) {
                fields[part.name] = String(decoding: part.body, as: UTF8.self)
            }
        }
        if let text = fields["userId"] {
            guard let userId = UUID(uuidString: text.trimmingCharacters(in: .whitespaces)) else {
                throw APIError(.invalidRequest, "userId must be a UUID")
            }
            return try await users.exists(userId, appId: app.id) ? userId : nil
        }
        guard let number = fields["employeeNumber"]?.trimmingCharacters(in: .whitespaces), !number.isEmpty else {
            throw APIError(.invalidRequest, "name the user to compare with: userId or employeeNumber (a multipart field or a query parameter)")
        }
        guard number.utf8.count <= 64 else { return nil }
        return try await users.user(appId: app.id, employeeNumber: number)
    }

    struct SearchHit: Encodable {
        var userId: String
        var employeeNumber: String
        var score: Float
    }

    /// 1:N search at the app's operating point, the same decision as face login (threshold, ambiguity
    /// margin). Operators also see up to `limit` (1–20, default 5) best candidates, one per user; the app
    /// server sees only the decision. Charged to the client address like a login (a stranger's face is a
    /// failed attempt, so a flood of probes waits).
    func searchFaces(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let isAppServer = Self.isAppServer(request)
        let limit = try request.query["limit"].map { text in
            guard let value = Int(text), (1...20).contains(value) else { throw APIError(.invalidRequest, "limit must be 1–20") }
            return value
        } ?? 5
        return try await recorded(request, kind: "face.search", appId: app.id) { draft in
            try await apps.admit(app, module: .faceLogin)
            let image = Data(try image(request))
            return try await attempts.attempt(appId: app.id, [.clientAddress(clientAddress(request))]) {
                let result = try await faceJob(FaceJob(kind: .identify, appId: app.id, image: image, topK: max(limit * 3, 10),
                                                       threshold: app.matchThreshold))
                guard [.match, .noMatchFace, .ambiguousMatch].contains(result.outcome) else { throw APIError(refusing: result) }
                var bestPerUser: [FaceCandidate] = []
                for candidate in result.candidates.sorted(by: { $0.distance < $1.distance })
                where !bestPerUser.contains(where: { $0.userId == candidate.userId }) {
                    bestPerUser.append(candidate)
                }
                let shown = Array(bestPerUser.prefix(isAppServer ? 1 : limit))
                let numbers = try await users.employeeNumbers(of: shown.map(\.userId), appId: app.id)
                let hits = shown.compactMap { candidate in
                    numbers[candidate.userId].map { SearchHit(userId: candidate.userId.wire, employeeNumber: $0, score: candidate.distance) }
                }
                let match = result.outcome == .match ? hits.first : nil
                draft.userId = match.flatMap { UUID(uuidString: $0.userId) }
                draft.score = bestPerUser.first?.distance
                if result.outcome != .match { draft.outcome = result.outcome.rawValue }
                struct Answer: Encodable {
                    var outcome: FaceOutcome
                    var match: SearchHit?
                    var model: FaceModel
                    var threshold: Float
                    var transactionId: String
                    var candidates: [SearchHit]?
                }
                let answer = Answer(outcome: result.outcome, match: match, model: app.faceModel, threshold: app.matchThreshold,
                                    transactionId: draft.id.wire, candidates: isAppServer ? nil : hits)
                return (.json(answer), result.outcome == .match ? .success : .failure)
            }
        }
    }


    static func isAppServer(_ request: HTTPRequest) -> Bool {
        (request.headers["Authorization"] ?? "").lowercased().hasPrefix("basic ")
    }

    /// The app server (HTTP Basic) or a client app (access token).
    var appServerOrClient: Authenticator<AppRecord> {
        Authenticator { [self] request in
            Self.isAppServer(request) ? try await requireAppServer(request) : try await requireClient(request)
        }
    }

    /// The app server of the `{appId}` app, or an operator covering it.
    var appServerOrOperator: Authenticator<AppRecord> {
        Authenticator { [self] request in
            guard Self.isAppServer(request) else { return try await operatorApp(request) }
            let app = try await requireAppServer(request)
            guard app.id == (try request.uuidParameter("appId")) else {
                throw APIError(.forbidden, "these app server credentials are for another app")
            }
            return app
        }
    }
}
