import Crypto
import FaceGateCore
import Foundation
import HTTPServer

/// Face comparisons without a login over HTTP (the decisions are `FaceComparison`'s): 1:1 verify (`/v1/face-verify`) and
/// 1:N search of an app (`/v1/apps/{appId}/faces/search`), each recorded as a transaction.
extension GatewayContext {
    func registerFaceVerifyRoutes(on router: APIRoutes) {
        router.group(appServerOrClient).add("POST", "/v1/face-verify", answers: [VerifyAnswer.self], doors: [.clientFaceVerify, .appServerFaceVerify],
                                           upload: true) { [self] request, caller in
            try await verifyFace(request, caller)
        }
        router.group(appServerOrOperator).add("POST", "/v1/apps/{appId}/faces/search", answers: [SearchAnswer.self], doors: [.faceSearch],
                                             upload: true) { [self] request, caller in
            try await searchFaces(request, caller)
        }
    }

    var faceComparison: FaceComparison { FaceComparison(admission: apps, attempts: attempts, users: users, bindings: bindings, matcher: self) }

    /// A client app learns only `match`; the app server (HTTP Basic) also the user, the distance in the model's units,
    /// the threshold and the model (`FaceComparison.verify`).
    func verifyFace(_ request: HTTPRequest, _ caller: AppCaller) async throws -> HTTPResponse {
        let (app, isAppServer) = (caller.app, caller.isAppServer)
        if isAppServer { try admitServerCall(request, appServer: app) }
        return try await recorded(request, kind: "face.verify", appId: app.id) { draft in
            var verifier = FaceComparison.Verifier.appServer
            if !isAppServer {
                let device = try await clientDevice(request, app: app)
                draft.note(device)
                verifier = .client(device: device, address: clientAddress(request))
            }
            let verdict = try await faceComparison.verify(app: app, by: verifier, image: { Data(try image(request)) },
                                                          claim: { try claim(request) }, draft: &draft)
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
    private func claim(_ request: HTTPRequest) throws -> FaceComparison.Claim {
        var fields = request.query
        if (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("multipart/form-data") {
            for part in try request.multipartParts() where ["userId", "employeeNumber"].contains(part.name) {
                fields[part.name] = String(decoding: part.body, as: UTF8.self)
            }
        }
        return FaceComparison.Claim(userId: fields["userId"], employeeNumber: fields["employeeNumber"])
    }

    /// Operators see up to `limit` (1–20, default 5) best candidates, one per user; the app server sees only the decision.
    func searchFaces(_ request: HTTPRequest, _ caller: AppCaller) async throws -> HTTPResponse {
        let (app, isAppServer) = (caller.app, caller.isAppServer)
        let limit = try request.query["limit"].map { text in
            guard let value = Int(text), (1...20).contains(value) else { throw APIError(.invalidRequest, "limit must be 1–20") }
            return value
        } ?? 5
        try admitServerCall(request, appServer: isAppServer ? app : nil)
        return try await recorded(request, kind: "face.search", appId: app.id) { draft in
            let search = try await faceComparison.search(app: app, forAppServer: isAppServer, limit: limit,
                                                         image: { Data(try image(request)) }, draft: &draft)
            func hit(_ hit: FaceComparison.Hit) -> SearchAnswer.Hit {
                SearchAnswer.Hit(userId: hit.userId.wire, employeeNumber: hit.employeeNumber, score: hit.distance)
            }
            let answer = SearchAnswer(outcome: search.outcome, match: search.match.map(hit), model: app.faceModel, threshold: app.matchThreshold,
                                transactionId: draft.id.wire, candidates: isAppServer ? nil : search.candidates.map(hit))
            return .json(answer)
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

    /// The app server (HTTP Basic, its current secret) or a client app (access token).
    var appServerOrClient: Authenticator<AppCaller> {
        Authenticator { [self] request in
            AppCaller.sendsBasic(request) ? AppCaller(app: try await requireAppServer(request).app, isAppServer: true)
                : AppCaller(app: try await requireClient(request), isAppServer: false)
        }
    }

    /// Server callers (operator keys, app servers) are limited per credential (`FACEGATE_SERVER_CALL_RATE`), never by the
    /// outcomes of their calls: an app server by its app, an operator by a hash of its key (which is never kept).
    func admitServerCall(_ request: HTTPRequest, appServer: AppRecord? = nil) throws {
        let key = appServer.map { "app:" + $0.id.wire }
            ?? "operator:" + Hex.encode(SHA256.hash(Array(((try? bearer(request, missing: .unauthorized)) ?? "").utf8)))
        guard serverCallRate.admit(key) else {
            let wait = serverCallRate.retryAfter(key)
            throw APIError(.rateLimited, "this credential has used up its calls for now (FACEGATE_SERVER_CALL_RATE); wait \(wait) s", retryAfter: wait)
        }
    }

    /// The app server of the `{appId}` app, or an operator covering it.
    var appServerOrOperator: Authenticator<AppCaller> {
        Authenticator { [self] request in
            guard AppCaller.sendsBasic(request) else { return AppCaller(app: try await operatorApp(request), isAppServer: false) }
            let app = try await requireAppServer(request).app
            guard app.id == (try request.uuidParameter("appId")) else {
                throw APIError(.forbidden, "these app server credentials are for another app")
            }
            return AppCaller(app: app, isAppServer: true)
        }
    }
}

/// An app as a route group that admits its app server or another caller proved it: which of them called decides what
/// the answer may show.
struct AppCaller: Sendable {
    var app: AppRecord
    /// The app server (HTTP Basic), not a client app or an operator.
    var isAppServer: Bool

    /// Credentials in HTTP Basic, the app server's scheme: which authentication the group tries.
    static func sendsBasic(_ request: HTTPRequest) -> Bool {
        (request.headers["Authorization"] ?? "").lowercased().hasPrefix("basic ")
    }
}
