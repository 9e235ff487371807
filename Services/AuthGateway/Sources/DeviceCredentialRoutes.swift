import FaceGateCore
import Foundation
import HTTPServer

/// Device biometric credentials over HTTP (the decisions are `DeviceCredentials`'). Every error of the client routes
/// says in its message whether face login can stand in: `… (fallback: faceLogin)` or `… (fallback: none)` (the error
/// envelope has no room for another field).
extension GatewayContext {
    func registerDeviceCredentialRoutes(on router: APIRoutes) {
        let clients = router.group(deviceCredentialClient)
        clients.add("POST", "/v1/device-credentials", answers: [Registered.self], maxBodyBytes: 32 << 10) { [self] request, client in
            try await registerDeviceCredential(request, client: client)
        }
        clients.add("POST", "/v1/device-credentials/challenges", answers: [DeviceChallengeIssued.self], maxBodyBytes: 4096) { [self] request, client in
            try await deviceChallenge(request, client: client)
        }
        clients.add("POST", "/v1/device-credentials/assertions", answers: [FaceGateIdentity.self], doors: [.deviceCredentialAssertion],
                    maxBodyBytes: 8192) { [self] request, client in
            try await deviceAssertion(request, client: client)
        }
        clients.add("DELETE", "/v1/device-credentials/{credentialId}", answers: []) { [self] request, client in
            try await revokeOwnDeviceCredential(request, client: client)
        }
        let operators = router.group(appOperator)
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/device-credentials", answers: [Registered.self], maxBodyBytes: 32 << 10) { [self] request, app in
            try await registerDeviceCredentialAsOperator(request, app: app)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/device-credentials", answers: [CredentialPage.self]) { [self] request, app in
            .json(CredentialPage(items: try await deviceCredentialFlow.list(app: app, user: try request.uuidParameter("userId"))))
        }
        operators.add("DELETE", "/v1/apps/{appId}/device-credentials/{credentialId}", answers: []) { [self] request, app in
            try await recorded(request, kind: "device.revoke", appId: app.id) { draft in
                try await deviceCredentialFlow.revoke(app: app, credentialId: request.pathParameters["credentialId"], device: nil, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/device-credentials/{credentialId}/reset", answers: []) { [self] request, app in
            let credentialId = try request.uuidParameter("credentialId")
            return try await recorded(request, kind: "device.credential.reset", appId: app.id) { draft in
                try await deviceCredentialFlow.reset(app: app, credentialId: credentialId, draft: &draft)
                return .noContent
            }
        }
    }

    var deviceCredentialFlow: DeviceCredentials {
        DeviceCredentials(admission: apps, attempts: attempts, credentials: deviceCredentials, spentTokenIds: spentTokenIds, users: users,
                          tokens: identityTokens, keys: keySet, issuer: configuration.issuer) { [logger] credential in
            logger.warning("device credential counter did not advance; credential flagged", ["credential.id": credential.wire])
        }
    }

    /// Client apps, as `client`; a refusal names the fallback (none: no app is known yet), as every refusal here does.
    var deviceCredentialClient: Authenticator<AppRecord> {
        Authenticator { [self] request in
            do {
                return try await requireClient(request)
            } catch {
                throw await withFallback(error, app: nil, user: nil)
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

    func registerDeviceCredential(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        try await clientCall(request, kind: "device.register", client: client, parse: { try request.decodeJSON(ClientRegistrationBody.self) }) {
            device, body, draft in
            let id = try await deviceCredentialFlow.register(app: client, device: device.id, identityToken: body.identityToken, credential: {
                try DeviceCredentials.NewCredential(publicKey: body.publicKey, policy: body.policy, attestation: body.attestation)
            }, draft: &draft)
            return .json(Registered(credentialId: id.wire), status: 201)
        }
    }

    func registerDeviceCredentialAsOperator(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        let body = try request.decodeJSON(OperatorRegistrationBody.self)
        return try await recorded(request, kind: "device.register", appId: app.id, deviceId: body.deviceId) { draft in
            let id = try await deviceCredentialFlow.registerAsOperator(app: app, user: userId, device: body.deviceId, credential: {
                try DeviceCredentials.NewCredential(publicKey: body.publicKey, policy: body.policy, attestation: body.attestation)
            }, draft: &draft)
            return .json(Registered(credentialId: id.wire), status: 201)
        }
    }

    func deviceChallenge(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        struct Body: Decodable { var credentialId: String }
        return try await clientCall(request, kind: "device.challenge", client: client, parse: { try request.decodeJSON(Body.self) }) {
            device, body, draft in
            let issued = try await deviceCredentialFlow.challenge(app: client, device: device.id, credentialId: body.credentialId, draft: &draft)
            return .json(DeviceChallengeIssued(challenge: issued.challenge, expiresIn: issued.expiresIn, deviceId: issued.deviceId))
        }
    }

    func deviceAssertion(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        struct Body: Decodable { var credentialId: String; var challenge: String; var counter: Int64; var signature: String }
        return try await clientCall(request, kind: "device.assert", client: client, parse: { try request.decodeJSON(Body.self) }) {
            device, body, draft in
            let assertion = DeviceCredentials.Assertion(credentialId: body.credentialId, challenge: body.challenge, counter: body.counter,
                                                        signature: body.signature)
            let (token, user) = try await deviceCredentialFlow.assert(app: client, device: device.id, keyThumbprint: device.thumbprint,
                                                                     clientAddress: clientAddress(request), assertion, draft: &draft)
            return .json(identity(token, user: user, transaction: draft.id))
        }
    }

    /// Client revocation: only from the device the credential belongs to.
    func revokeOwnDeviceCredential(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        try await clientCall(request, kind: "device.revoke", client: client, parse: {}) { device, _, draft in
            try await deviceCredentialFlow.revoke(app: client, credentialId: request.pathParameters["credentialId"], device: device.id, draft: &draft)
            return .noContent
        }
    }

    /// A client call, recorded whatever happens: the device proven (or named) inside the recorded call, so a forged or
    /// replayed proof leaves a row too; then the body parsed. Every refusal carries the fallback hint.
    private func clientCall<Body>(_ request: HTTPRequest, kind: String, client: AppRecord, parse: () throws -> Body,
                                  _ handle: (ClientDevice, Body, inout TransactionDraft) async throws -> HTTPResponse) async throws -> HTTPResponse {
        do {
            return try await recorded(request, kind: kind, appId: client.id) { draft in
                do {
                    let device = try await clientDevice(request, app: client)
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
        func note() async -> String { marker + (await deviceCredentialFlow.fallback(app: app, user: user)).rawValue + ")" }
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
