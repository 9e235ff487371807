import FaceGateCore
import Foundation
import HTTPServer

/// App server API (HTTP Basic appId:appSecret): access tokens for its client apps, and the exchange of
/// a client's identity token for the verified user.
struct AppServerRoutes: RouteCollection {
    let accessTokens: AccessTokens
    let identityExchange: IdentityExchange

    func boot(_ routes: APIRoutes) {
        let appServers = routes.group(\.appServer)
        appServers.add("POST", "/v1/access-tokens", answers: [AccessTokenIssued.self], maxBodyBytes: 4096) { _, context in
            let server = context.caller
            let (token, expiresIn) = try accessTokens.issue(app: server.app, previousSecret: server.previousSecret)
            return .json(AccessTokenIssued(accessToken: token, expiresIn: expiresIn))
        }
        appServers.add("POST", "/v1/identity/exchange", answers: [Exchanged.self], maxBodyBytes: 8192) { request, context in
            try await exchange(request, context, app: context.caller.app)
        }
    }

    struct AccessTokenIssued: Encodable { var accessToken: String; var tokenType = "Bearer"; var expiresIn: Int }

    struct ExchangeBody: Decodable { var identityToken: String }

    struct Exchanged: Encodable {
        var userId: String
        var employeeNumber: String
        var name: String
        var appId: String
        var deviceId: String
        var method: String
        var amr: [String]
        var kioskId: String?
        var transactionId: String
    }

    private func exchange(_ request: HTTPRequest, _ context: CallContext<Callers.AppServer>, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(ExchangeBody.self)
        return try await context.recorded(kind: "identity.exchange", appId: app.id) { draft in
            let exchanged = try await identityExchange.exchange(body.identityToken, app: app, draft: &draft)
            return .json(Exchanged(userId: exchanged.userId.wire, employeeNumber: exchanged.user.employeeNumber, name: exchanged.user.name,
                                   appId: app.id.wire, deviceId: exchanged.deviceId, method: exchanged.method, amr: exchanged.amr,
                                   kioskId: exchanged.kioskId, transactionId: exchanged.transactionId))
        }
    }
}
