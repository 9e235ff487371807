import FaceGateCore
import Foundation
import HTTPServer

/// Device biometric credentials over HTTP (the decisions are `DeviceCredentials`'). Every error of the client routes
/// says in its message whether face login can stand in: `… (fallback: faceLogin)` or `… (fallback: none)` (the error
/// envelope has no room for another field).
struct DeviceCredentialRoutes: RouteCollection {
    let deviceCredentials: DeviceCredentials
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        // Client apps, as `client`; a refusal names the fallback (none: no app is known yet), as every refusal here does.
        let client = routes.callers.client
        let clients = routes.group(Authenticator { request in
            do {
                return try await client.authenticate(request)
            } catch {
                throw await withFallback(error, app: nil, user: nil)
            }
        })
        clients.add("POST", "/v1/device-credentials", answers: [Registered.self], maxBodyBytes: 32 << 10) { request, context in
            try await register(request, context)
        }
        clients.add("POST", "/v1/device-credentials/challenges", answers: [DeviceChallengeIssued.self], maxBodyBytes: 4096) { request, context in
            try await challenge(request, context)
        }
        clients.add("POST", "/v1/device-credentials/assertions", answers: [FaceGateIdentity.self], doors: [.deviceCredentialAssertion],
                    maxBodyBytes: 8192) { request, context in
            try await assert(request, context)
        }
        clients.add("DELETE", "/v1/device-credentials/{credentialId}", answers: []) { request, context in
            // Client revocation: only from the device the credential belongs to.
            try await clientCall(context, kind: "device.revoke", parse: {}) { device, _, draft in
                try await deviceCredentials.revoke(app: context.caller, credentialId: request.pathParameters["credentialId"], device: device.id,
                                                   draft: &draft)
                return .noContent
            }
        }
        let operators = routes.group(\.appOperator)
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/device-credentials", answers: [Registered.self], maxBodyBytes: 32 << 10) { request, context in
            try await registerAsOperator(request, context)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/device-credentials", answers: [CredentialPage.self]) { request, context in
            .json(CredentialPage(items: try await deviceCredentials.list(app: context.caller, user: try request.uuidParameter("userId"))))
        }
        operators.add("DELETE", "/v1/apps/{appId}/device-credentials/{credentialId}", answers: []) { request, context in
            try await context.recorded(kind: "device.revoke", appId: context.caller.id) { draft in
                try await deviceCredentials.revoke(app: context.caller, credentialId: request.pathParameters["credentialId"], device: nil, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/device-credentials/{credentialId}/reset", answers: []) { request, context in
            let credentialId = try request.uuidParameter("credentialId")
            return try await context.recorded(kind: "device.credential.reset", appId: context.caller.id) { draft in
                try await deviceCredentials.reset(app: context.caller, credentialId: credentialId, draft: &draft)
                return .noContent
            }
        }
    }

    struct ClientRegistrationBody: Decodable {
        var identityToken: String
        var publicKey: String
        var policy: String
        var attestation: String?
    }

    struct OperatorRegistrationBody: Decodable {
        var deviceId: String
        var publicKey: String
        var policy: String
        var attestation: String?
    }

    struct Registered: Encodable { var credentialId: String }
    struct CredentialPage: Encodable { var items: [CredentialView] }
    struct DeviceChallengeIssued: Encodable { var challenge: String; var expiresIn: Int; var deviceId: String }

    private func register(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        try await clientCall(context, kind: "device.register", parse: { try request.decodeJSON(ClientRegistrationBody.self) }) {
            device, body, draft in
            let id = try await deviceCredentials.register(app: context.caller, device: device.id, identityToken: body.identityToken, credential: {
                try DeviceCredentials.NewCredential(publicKey: body.publicKey, policy: body.policy, attestation: body.attestation)
            }, draft: &draft)
            return .json(Registered(credentialId: id.wire), status: 201)
        }
    }

    private func registerAsOperator(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        let (app, userId) = (context.caller, try request.uuidParameter("userId"))
        let body = try request.decodeJSON(OperatorRegistrationBody.self)
        return try await context.recorded(kind: "device.register", appId: app.id, deviceId: body.deviceId) { draft in
            let id = try await deviceCredentials.registerAsOperator(app: app, user: userId, device: body.deviceId, credential: {
                try DeviceCredentials.NewCredential(publicKey: body.publicKey, policy: body.policy, attestation: body.attestation)
            }, draft: &draft)
            return .json(Registered(credentialId: id.wire), status: 201)
        }
    }

    private func challenge(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        struct Body: Decodable { var credentialId: String }
        return try await clientCall(context, kind: "device.challenge", parse: { try request.decodeJSON(Body.self) }) {
            device, body, draft in
            let issued = try await deviceCredentials.challenge(app: context.caller, device: device.id, credentialId: body.credentialId, draft: &draft)
            return .json(DeviceChallengeIssued(challenge: issued.challenge, expiresIn: issued.expiresIn, deviceId: issued.deviceId))
        }
    }

    private func assert(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        struct Body: Decodable { var credentialId: String; var challenge: String; var counter: Int64; var signature: String }
        return try await clientCall(context, kind: "device.assert", parse: { try request.decodeJSON(Body.self) }) {
            device, body, draft in
            let assertion = DeviceCredentials.Assertion(credentialId: body.credentialId, challenge: body.challenge, counter: body.counter,
                                                        signature: body.signature)
            let (token, user) = try await deviceCredentials.assert(app: context.caller, device: device.id, keyThumbprint: device.thumbprint,
                                                                   clientAddress: context.clientAddress, assertion, draft: &draft)
            return .json(deviceCredentials.tokens.identity(token, user: user, transaction: draft.id))
        }
    }

    /// A client call, recorded whatever happens: the device proven (or named) inside the recorded call, so a forged or
    /// replayed proof leaves a row too; then the body parsed. Every refusal carries the fallback hint.
    private func clientCall<Body>(_ context: CallContext<AppRecord>, kind: String, parse: () throws -> Body,
                                  _ handle: (ClientDevice, Body, inout TransactionDraft) async throws -> HTTPResponse) async throws -> HTTPResponse {
        let client = context.caller
        do {
            return try await context.recorded(kind: kind, appId: client.id) { draft in
                do {
                    let device = try await devices.device(context.request, app: client)
                    draft.note(device)
                    return try await handle(device, try parse(), &draft)
                } catch {
                    throw await withFallback(error, app: client, user: draft.userId)
                }
            }
        } catch {
            throw await withFallback(error, app: client, user: nil)
        }
    }

    /// `error` with ` (fallback: faceLogin)` or ` (fallback: none)` appended to its message, once.
    private func withFallback(_ error: Error, app: AppRecord?, user: UUID?) async -> Error {
        let marker = " (fallback: "
        func note() async -> String { marker + (await deviceCredentials.fallback(app: app, user: user)).rawValue + ")" }
        if var error = error as? APIError {
            guard !error.message.contains(marker) else { return error }
            error.message += await note()
            return error
        }
        if var error = error as? HTTPError {
            guard !error.message.contains(marker) else { return error }
            error.message += await note()
            return error
        }
        return error
    }
}
