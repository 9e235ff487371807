import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT

/// The device a client request comes from.
struct ClientDevice: Sendable {
    /// Its identity everywhere (devices, lockouts, audit rows, token claims, device credentials): the RFC 7638
    /// thumbprint of the key that signed the request on a `dpop` app, the `X-Device-Id` header on a `header` app.
    var id: String
    /// True when `id` is a key the request proved it holds.
    var isKey: Bool
    /// `X-Device-Id` sent next to a proof: a label for people, never an identity.
    var label: String?

    /// The key thumbprint, for `cnf.jkt`.
    var thumbprint: String? { isKey ? id : nil }
}

extension TransactionDraft {
    mutating func note(_ device: ClientDevice) {
        deviceId = device.id
        if let label = device.label { detail["deviceLabel"] = label }
    }
}

/// Device keys (RFC 9449 DPoP) and the tickets that let a new key be bound to a user.
extension GatewayContext {
    func registerDeviceKeyRoutes(on router: APIRoutes) {
        router.group(appServerOrClient).add("POST", "/v1/device-bindings", maxBodyBytes: 4096) { [self] request, app in
            try await issueBindingTicket(request, app: app)
        }
    }

    /// Who is calling, by the app's device binding: a verified, unused DPoP proof (`dpop`) or the header (`header`).
    func clientDevice(_ request: HTTPRequest, app: AppRecord) async throws -> ClientDevice {
        guard app.deviceBinding == .dpop else { return ClientDevice(id: try deviceId(request), isKey: false) }
        let proof = try await dpopProof(request, appId: app.id)
        return ClientDevice(id: proof.thumbprint, isKey: true, label: try? deviceId(request))
    }

    /// Verifies the request's `DPoP` header against its method, URL, access token and body, then spends
    /// its `jti` in PostgreSQL (shared by every gateway instance) for as long as the proof is fresh.
    func dpopProof(_ request: HTTPRequest, appId: UUID) async throws -> DPoPProof {
        guard let header = request.headers["DPoP"] else {
            throw APIError(.dpopProofInvalid, "this app identifies devices by their keys: sign the request with a DPoP proof (RFC 9449, ES256)")
        }
        let maxAge = configuration.dpopMaxAge
        do {
            let proof = try DPoP.verify(header, method: request.method, urls: publicURLs(request), accessToken: try? bearer(request, missing: .accessTokenInvalid),
                                        body: request.body, maxAge: TimeInterval(maxAge))
            guard try await spentTokenIds.spend("dpop:" + proof.thumbprint + ":" + proof.jti, appId: appId,
                                                expiresAt: proof.issuedAt + Int64(maxAge) + 60) else { throw DPoPError.replayed }
            return proof
        } catch let error as DPoPError {
            throw APIError(.dpopProofInvalid, error.description)
        }
    }

    /// The URLs a proof's `htu` may name for this request.
    func publicURLs(_ request: HTTPRequest) -> [String] {
        if let base = configuration.publicURL { return [base + request.path] }
        guard let host = request.headers["Host"] else { return [] }
        return ["https://" + host + request.path, "http://" + host + request.path]
    }

    struct BindingTicketBody: Decodable {
        var userId: UUID?
        var employeeNumber: String?
    }

    /// A one-time ticket that lets one new device key be bound to one user. The app server (Basic auth)
    /// asks for it after signing its user in by its own means; or a device key already bound to the user
    /// asks (Bearer access token + its DPoP proof), e.g. to show it as a code on the old phone.
    func issueBindingTicket(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let isAppServer = Self.isAppServer(request)
        let body = try request.decodeJSON(BindingTicketBody.self)
        return try await recorded(request, kind: "device.binding.ticket", appId: app.id) { draft in
            var candidates: [UUID]? = nil
            if !isAppServer {
                guard app.deviceBinding == .dpop else {
                    throw APIError(.forbidden, "devices approve new keys only on apps with deviceBinding dpop")
                }
                let device = try await clientDevice(request, app: app)
                draft.deviceId = device.id
                candidates = try await bindings.boundUsers(appId: app.id, device: device)
            }
            let userId: UUID
            if let id = body.userId {
                userId = id
            } else if let number = body.employeeNumber {
                guard let id = try await users.user(appId: app.id, employeeNumber: number) else { throw APIError(.notFound, "no such user") }
                userId = id
            } else if let only = candidates, only.count == 1 {
                userId = only[0]
            } else {
                throw APIError(.invalidRequest, "name the user: userId or employeeNumber")
            }
            draft.userId = userId
            if let candidates, !candidates.contains(userId) {
                throw APIError(.forbidden, "this device is not bound to that user")
            }
            guard try await users.exists(userId, appId: app.id) else { throw APIError(.notFound, "no such user") }
            let ticket = "fbt_" + Base64URL.encode(SecureRandom.bytes(32))
            let issuer = isAppServer ? "appServer" : "boundDevice"
            try await bindings.issueTicket(key: BindingTicketCheck.key(ticket), appId: app.id, user: userId, issuer: issuer,
                                           ttlSeconds: configuration.bindingTicketTTL)
            draft.detail["issuer"] = issuer
            struct Issued: Encodable { var bindingTicket: String; var userId: String; var expiresIn: Int }
            return .json(Issued(bindingTicket: ticket, userId: userId.wire, expiresIn: configuration.bindingTicketTTL), status: 201)
        }
    }
}
