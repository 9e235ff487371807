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
        router.group(appServerOrClient).add("POST", "/v1/device-bindings", answers: [BindingTickets.Issued.self], doors: [.bindingTicket],
                                           maxBodyBytes: 4096) { [self] request, caller in
            struct Body: Decodable {
                var userId: UUID?
                var employeeNumber: String?
            }
            let body = try request.decodeJSON(Body.self)
            if caller.isAppServer { try admitServerCall(request, appServer: caller.app) }
            let tickets = BindingTickets(bindings: bindings, users: users, ttlSeconds: configuration.bindingTicketTTL)
            return try await recorded(request, kind: "device.binding.ticket", appId: caller.app.id) { draft in
                let issuer: BindingTickets.Issuer = caller.isAppServer ? .appServer : .boundDevice { [self] in try await clientDevice(request, app: caller.app) }
                return .json(try await tickets.issue(app: caller.app, by: issuer, userId: body.userId, employeeNumber: body.employeeNumber,
                                                     draft: &draft), status: 201)
            }
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
        let urls = publicURLs(request)
        guard !urls.isEmpty else {
            throw APIError(.serviceUnavailable, "this gateway has no FACEGATE_PUBLIC_URL, so device proofs cannot be checked; its operator must set it")
        }
        do {
            let proof = try DPoP.verify(header, method: request.method, urls: urls, accessToken: try? bearer(request, missing: .accessTokenInvalid),
                                        body: request.body, maxAge: TimeInterval(maxAge))
            guard try await spentTokenIds.spend("dpop:" + proof.thumbprint + ":" + proof.jti, appId: appId,
                                                expiresAt: proof.issuedAt + Int64(maxAge) + 60) else { throw DPoPError.replayed }
            return proof
        } catch let error as DPoPError {
            throw APIError(.dpopProofInvalid, error.description)
        }
    }

    /// The URL a proof's `htu` must name for this request: `FACEGATE_PUBLIC_URL` + the path. Without it, only a gateway
    /// that listens on loopback alone (a developer's stack) takes `http(s)://` + the request's `Host`; any other checks no
    /// proof, since a client writes the `Host` it likes and a proof made for another site must not pass here.
    func publicURLs(_ request: HTTPRequest) -> [String] {
        if let base = configuration.publicURL { return [base + request.path] }
        guard configuration.listensOnLoopbackOnly, let host = request.headers["Host"] else { return [] }
        return ["https://" + host + request.path, "http://" + host + request.path]
    }
}
