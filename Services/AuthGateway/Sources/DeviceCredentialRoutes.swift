import AppRecords
import FaceGateCore
import IdentityRecords
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
        let client = routes.callers.device
        let clients = routes.group(Authenticator(client.documentation) { request in
            do {
                return try await client.authenticate(request)
            } catch {
                throw await withFallback(error, app: nil, user: nil)
            }
        }, tag: .deviceCredentials)
        clients.add("POST", "/v1/device-credentials", "registerDeviceCredential", """
            Register a device biometric key; proof of user: a fresh face-login identity token of this app and device, consumed here. \
            Replaces the user's previous credential on this device. Error messages end with (fallback: faceLogin) or (fallback: none)
            """, body: .json(ClientRegistrationBody.self), answers: [.created(Registered.self, "Registered")],
                    errors: [.identityTokenInvalid, .identityTokenExpired, .moduleDisabled, .moduleNotFormal, .notFound, .identityTokenUsed],
                    because: [.notFound: "the user no longer exists"], maxBodyBytes: 32 << 10) { request, context in
            try await register(request, context)
        }
        clients.add("POST", "/v1/device-credentials/challenges", "createDeviceChallenge",
                    "A single-use challenge for one credential (32 random bytes, base64url; 60 s)", body: .json(ChallengeRequest.self),
                    answers: [.ok(DeviceChallengeIssued.self, "The challenge")],
                    errors: [.moduleDisabled, .moduleNotFormal, .credentialNotEnrolled, .authenticationFailed, .credentialLocked, .rateLimited],
                    because: [.authenticationFailed: "the credential is blocked (its counter went backwards)"], maxBodyBytes: 4096) { request, context in
            try await challenge(request, context)
        }
        clients.add("POST", "/v1/device-credentials/assertions", "assertDeviceCredential", """
            Log in with a device key. A counter that does not advance (once non-zero) blocks the credential until it is registered again
            """, body: .json(Assertion.self), answers: [.ok(FaceGateIdentity.self, "SUCCESS with an identity token (method device_biometric)")],
                    errors: [.moduleDisabled, .moduleNotFormal, .credentialNotEnrolled, .authenticationFailed, .credentialLocked, .rateLimited],
                    because: [.authenticationFailed: "unknown or spent challenge, bad signature, counter not advancing"],
                    doors: [.deviceCredentialAssertion], maxBodyBytes: 8192) { request, context in
            try await assert(request, context)
        }
        clients.add("DELETE", "/v1/device-credentials/{credentialId}", "revokeOwnDeviceCredential", "Revoke this device's credential (immediately)",
                    answers: [.noContent("Revoked")], errors: [.credentialNotEnrolled],
                    because: [.credentialNotEnrolled: "no such live credential on this device"]) { request, context in
            // Client revocation: only from the device the credential belongs to.
            try await clientCall(context, kind: "device.revoke", parse: {}) { device, _, draft in
                try await deviceCredentials.revoke(app: context.caller, credentialId: request.pathParameters["credentialId"], device: device.id,
                                                   draft: &draft)
                return .noContent
            }
        }
        let operators = routes.group(\.appOperator, tag: .deviceCredentials)
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/device-credentials", "registerDeviceCredentialForUser",
                      "Register a device biometric key for a user (at a desk); replaces the user's credential on that device",
                      body: .json(OperatorRegistrationBody.self), answers: [.created(Registered.self, "Registered")], maxBodyBytes: 32 << 10) { request, context in
            try await registerAsOperator(request, context)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/device-credentials", "listDeviceCredentials",
                      "A user's device credentials, revoked ones included", answers: [.ok(CredentialPage.self, "The credentials")]) { request, context in
            .json(CredentialPage(items: try await deviceCredentials.list(app: context.caller, user: try request.uuidParameter("userId"))))
        }
        operators.add("DELETE", "/v1/apps/{appId}/device-credentials/{credentialId}", "revokeDeviceCredential",
                      "Revoke a device credential (immediately)", answers: [.noContent("Revoked")], errors: [.credentialNotEnrolled],
                      because: [.notFound: "app", .credentialNotEnrolled: "no such live credential"]) { request, context in
            try await context.recorded(kind: "device.revoke", appId: context.caller.id) { draft in
                try await deviceCredentials.revoke(app: context.caller, credentialId: request.pathParameters["credentialId"], device: nil, draft: &draft)
                return .noContent
            }
        }
        operators.add("POST", "/v1/apps/{appId}/device-credentials/{credentialId}/reset", "resetDeviceCredential",
                      "Clear a credential's failed-attempt counters and lock (a blocked counter needs a new registration)",
                      answers: [.noContent("Reset")], errors: [.credentialNotEnrolled],
                      because: [.notFound: "app", .credentialNotEnrolled: "no such credential"]) { request, context in
            let credentialId = try request.uuidParameter("credentialId")
            return try await context.recorded(kind: "device.credential.reset", appId: context.caller.id) { draft in
                try await deviceCredentials.reset(app: context.caller, credentialId: credentialId, draft: &draft)
                return .noContent
            }
        }
    }

    struct ClientRegistrationBody: Decodable, DocumentedSchema {
        static let schemaName = "DeviceCredentialRegistration"
        var identityToken: String
        var publicKey: String
        var policy: String
        var attestation: String?
    }

    struct OperatorRegistrationBody: Decodable, DocumentedSchema {
        static let schemaName = "OperatorDeviceCredentialRegistration"
        var deviceId: String
        var publicKey: String
        var policy: String
        var attestation: String?
    }

    struct Registered: Codable, DocumentedSchema {
        static let schemaName = "CredentialRegistered"
        var credentialId: String
    }

    struct CredentialPage: Codable, DocumentedSchema {
        static let schemaName = "DeviceCredentialList"
        var items: [CredentialView]
    }

    struct ChallengeRequest: Decodable, DocumentedSchema {
        static let schemaName = "DeviceChallengeRequest"
        var credentialId: String
    }

    struct DeviceChallengeIssued: Codable, DocumentedSchema {
        static let schemaName = "DeviceChallenge"
        var challenge: String
        var expiresIn: Int
        var deviceId: String
    }

    struct Assertion: Decodable, DocumentedSchema {
        static let schemaName = "DeviceAssertion"
        var credentialId: String
        var challenge: String
        var counter: Int64
        var signature: String
    }

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
        return try await clientCall(context, kind: "device.challenge", parse: { try request.decodeJSON(ChallengeRequest.self) }) {
            device, body, draft in
            let issued = try await deviceCredentials.challenge(app: context.caller, device: device.id, credentialId: body.credentialId, draft: &draft)
            return .json(DeviceChallengeIssued(challenge: issued.challenge, expiresIn: issued.expiresIn, deviceId: issued.deviceId))
        }
    }

    private func assert(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        return try await clientCall(context, kind: "device.assert", parse: { try request.decodeJSON(Assertion.self) }) {
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
