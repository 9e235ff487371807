import AppRecords
import FaceGateCore
import Foundation
import HTTPServer

/// App server API (HTTP Basic appId:appSecret): access tokens for its client apps, and the exchange of
/// a client's identity token for the verified user.
struct AppServerRoutes: RouteCollection {
    let accessTokens: AccessTokens
    let identityExchange: IdentityExchange

    func boot(_ routes: APIRoutes) {
        let appServers = routes.group(\.appServer, tag: .identity)
        appServers.add("POST", "/v1/access-tokens", "issueAccessToken", "Issue an access token for the app's client apps (no body)",
                       answers: [.ok(AccessTokenIssued.self, "The token")], maxBodyBytes: 4096) { _, context in
            let server = context.caller
            let (token, expiresIn) = try accessTokens.issue(app: server.app, previousSecret: server.previousSecret)
            return .json(AccessTokenIssued(accessToken: token, expiresIn: expiresIn))
        }
        appServers.add("POST", "/v1/identity/exchange", "exchangeIdentityToken", "Exchange an identity token (single use) for the verified user",
                       body: .json(ExchangeBody.self), answers: [.ok(Exchanged.self, "The verified user")],
                       errors: [.identityTokenInvalid, .identityTokenExpired, .notFound, .identityTokenUsed],
                       because: [.identityTokenInvalid: "another app's, tampered, wrong type", .notFound: "the user no longer exists"],
                       maxBodyBytes: 8192) { request, context in
            try await exchange(request, context, app: context.caller.app)
        }
    }

    struct AccessTokenIssued: Codable, DocumentedSchema {
        static let schemaName = "AccessToken"
        var accessToken: String; var tokenType = "Bearer"; var expiresIn: Int }

    struct ExchangeBody: Decodable, DocumentedSchema {
        static let schemaName = "IdentityTokenExchange"
        var identityToken: String
    }

    struct Exchanged: Codable, DocumentedSchema {
        static let schemaName = "Identity"
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
