import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import HTTPServer
import JWT
import KioskSessionRecords
import PostgresClient
import ServiceKit

extension TransactionDraft {
    mutating func note(_ device: ClientDevice) {
        deviceId = device.id
        if let label = device.label { detail["deviceLabel"] = label }
    }
}

/// Proves the device of a client call (RFC 9449 DPoP). A proof signs the body (`dgst`), so it is checked with the body,
/// inside the recorded call (a forged or replayed proof leaves a row), unlike the credentials a route group checks from
/// the headers.
struct DeviceProofs: Sendable {
    let spentTokenIds: any SpentTokenIds
    /// `FACEGATE_DPOP_MAX_AGE`: how old a proof may be.
    let maxAge: Int
    /// `FACEGATE_PUBLIC_URL`, which every proof's `htu` names.
    let publicURL: String?
    /// Without a public URL, a gateway on loopback alone (a developer's stack) takes the request's `Host`.
    let listensOnLoopbackOnly: Bool

    /// Who is calling, by the app's device binding: a verified, unused DPoP proof (`dpop`) or the header (`header`).
    func device(_ request: HTTPRequest, app: AppRecord) async throws -> ClientDevice {
        let (device, spend) = try deviceSpendingLater(request, app: app)
        if let spend { try await spend.run() }
        return device
    }

    /// `device`, with the proof's `jti` not spent yet: the step that spends it, to be sent first with the call's other
    /// statements (`PostgresStep.then`), refuses a replay as `device` does and keeps nothing sent with it. nil on a
    /// `header` app.
    func deviceSpendingLater(_ request: HTTPRequest, app: AppRecord) throws -> (ClientDevice, spend: PostgresStep<Void>?) {
        guard app.deviceBinding == .dpop else { return (ClientDevice(id: try request.deviceId(), isKey: false), nil) }
        let (proof, spend) = try verified(request, appId: app.id)
        return (ClientDevice(id: proof.thumbprint, isKey: true, label: try? request.deviceId()), spend)
    }

    /// The key that signed the request, whatever the app's binding (a registered kiosk signs on every app); nil without a
    /// `DPoP` header.
    func signingKey(_ request: HTTPRequest, appId: UUID) async throws -> String? {
        request.headers["DPoP"] == nil ? nil : try await proof(request, appId: appId).thumbprint
    }

    /// Verifies the request's `DPoP` header against its method, URL, access token and body, then spends
    /// its `jti` in PostgreSQL (shared by every gateway instance) for as long as the proof is fresh.
    private func proof(_ request: HTTPRequest, appId: UUID) async throws -> DPoPProof {
        let (proof, spend) = try verified(request, appId: appId)
        try await spend.run()
        return proof
    }

    /// The verified proof and the step that spends its `jti` (a replay fails it with `dpopProofInvalid`).
    private func verified(_ request: HTTPRequest, appId: UUID) throws -> (DPoPProof, spend: PostgresStep<Void>) {
        guard let header = request.headers["DPoP"] else {
            throw APIError(.dpopProofInvalid, "this app identifies devices by their keys: sign the request with a DPoP proof (RFC 9449, ES256)")
        }
        let urls = publicURLs(request)
        guard !urls.isEmpty else {
            throw APIError(.serviceUnavailable, "this gateway has no FACEGATE_PUBLIC_URL, so device proofs cannot be checked; its operator must set it")
        }
        do {
            let proof = try DPoP.verify(header, method: request.method, urls: urls, accessToken: try? bearer(request, missing: .accessTokenInvalid),
                                        body: request.body, maxAge: TimeInterval(maxAge))
            let spend = spentTokenIds.spending("dpop:" + proof.thumbprint + ":" + proof.jti, appId: appId,
                                               expiresAt: proof.issuedAt + Int64(maxAge) + 60)
            return (proof, spend.mappingError { $0 is TokenIdSpentBefore ? APIError(.dpopProofInvalid, DPoPError.replayed.description) : $0 })
        } catch let error as DPoPError {
            throw APIError(.dpopProofInvalid, error.description)
        }
    }

    /// The URL a proof's `htu` must name for this request: `FACEGATE_PUBLIC_URL` + the path. Without it, only a gateway
    /// that listens on loopback alone (a developer's stack) takes `http(s)://` + the request's `Host`; any other checks no
    /// proof, since a client writes the `Host` it likes and a proof made for another site must not pass here.
    private func publicURLs(_ request: HTTPRequest) -> [String] {
        if let publicURL { return [publicURL + request.path] }
        guard listensOnLoopbackOnly, let host = request.headers["Host"] else { return [] }
        return ["https://" + host + request.path, "http://" + host + request.path]
    }
}

/// Proves that a live kiosk registered to the app is calling a kiosk route: a DPoP proof (whatever the app's
/// `deviceBinding`) by the key of a live kiosk of the app, from an address it is allowed.
struct KioskProofs: Sendable {
    let devices: DeviceProofs
    let registration: KioskRegistration
    let apps: any AppStore

    /// Call it inside the recorded call, so that a refusal is audited.
    func kiosk<Caller>(_ context: CallContext<Caller>, app: AppRecord, draft: inout TransactionDraft) async throws -> RegisteredKiosk {
        let jkt = try await devices.signingKey(context.request, appId: app.id)
        draft.deviceId = jkt
        let kiosk = try await registration.kiosk(app: app, jkt: jkt, address: context.clientAddress)
        draft.detail["kioskId"] = kiosk.id.wire
        if let label = try? context.request.deviceId() { draft.detail["deviceLabel"] = label }
        return kiosk
    }

    /// A kiosk route that writes no transaction of its own: the kiosk, with a refusal recorded on the app's chain
    /// (`kiosk.refused`). With `session`, the kiosk must be the one that opened it.
    func proven<Caller>(_ context: CallContext<Caller>, app: AppRecord, session: KioskSession? = nil) async throws -> RegisteredKiosk {
        try await context.refusalRecorded(kind: "kiosk.refused", appId: app.id) { draft in
            let proven = try await kiosk(context, app: app, draft: &draft)
            if let session, session.kioskId != proven.id {
                throw APIError(.kioskNotRegistered, "this kiosk session was opened by another kiosk")
            }
            return proven
        }
    }

    /// The same for a route that knows only the session (its interview token is the caller's other proof).
    func proven<Caller>(_ context: CallContext<Caller>, session: KioskSession) async throws -> RegisteredKiosk {
        guard let app = try await apps.find(session.appId) else { throw APIError(.notFound, "no such kiosk session") }
        return try await proven(context, app: app, session: session)
    }
}
