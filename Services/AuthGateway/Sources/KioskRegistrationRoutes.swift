import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// Registered kiosks (operator): register a kiosk's DPoP key, list, revoke (`KioskRegistration`); and how every kiosk
/// route proves that a live kiosk of the app is calling.
extension GatewayContext {
    func registerKioskRegistrationRoutes(on router: APIRoutes) {
        let operators = router.group(appOperator)
        operators.add("POST", "/v1/apps/{appId}/kiosks", answers: [KioskRegistration.View.self], maxBodyBytes: 8192, idempotent: true) { [self] request, app in
            let new = try request.decodeJSON(KioskRegistration.NewKiosk.self)
            return try await recorded(request, kind: "kiosk.register", appId: app.id) { draft in
                .json(try await kioskRegistration.register(new, app: app, draft: &draft), status: 201)
            }
        }
        operators.add("GET", "/v1/apps/{appId}/kiosks", answers: [KioskPage.self]) { [self] _, app in
            .json(KioskPage(items: try await kioskRegistration.list(app: app)))
        }
        operators.add("DELETE", "/v1/apps/{appId}/kiosks/{kioskId}", answers: []) { [self] request, app in
            let id = try request.uuidParameter("kioskId")
            return try await recorded(request, kind: "kiosk.revoke", appId: app.id) { draft in
                try await kioskRegistration.revoke(id, app: app, draft: &draft)
                return .noContent
            }
        }
    }

    struct KioskPage: Encodable { var items: [KioskRegistration.View] }

    var kioskRegistration: KioskRegistration { KioskRegistration(registry: kioskRegistry, openSessions: kioskSessions, commands: self) }

    /// The registered kiosk calling a kiosk route: a DPoP proof (whatever the app's `deviceBinding`) by the key of a live
    /// kiosk of the app, from an address it is allowed. Call it inside the recorded call, so that a refusal is audited.
    func kioskDevice(_ request: HTTPRequest, app: AppRecord, draft: inout TransactionDraft) async throws -> RegisteredKiosk {
        let jkt = request.headers["DPoP"] == nil ? nil : try await dpopProof(request, appId: app.id).thumbprint
        draft.deviceId = jkt
        let kiosk = try await kioskRegistration.kiosk(app: app, jkt: jkt, address: clientAddress(request))
        draft.detail["kioskId"] = kiosk.id.wire
        if let label = try? deviceId(request) { draft.detail["deviceLabel"] = label }
        return kiosk
    }

    /// A kiosk route that writes no transaction of its own: the kiosk, with a refusal recorded on the app's chain
    /// (`kiosk.refused`). With `session`, the kiosk must be the one that opened it.
    func provenKiosk(_ request: HTTPRequest, app: AppRecord, session: KioskSession? = nil) async throws -> RegisteredKiosk {
        try await refusalRecorded(request, kind: "kiosk.refused", appId: app.id) { draft in
            let proven = try await kioskDevice(request, app: app, draft: &draft)
            if let session, session.kioskId != proven.id {
                throw APIError(.kioskNotRegistered, "this kiosk session was opened by another kiosk")
            }
            return proven
        }
    }

    /// The same for a route that knows only the session (its interview token is the caller's other proof).
    func provenKiosk(_ request: HTTPRequest, session: KioskSession) async throws -> RegisteredKiosk {
        guard let app = try await apps.find(session.appId) else { throw APIError(.notFound, "no such kiosk session") }
        return try await provenKiosk(request, app: app, session: session)
    }
}

extension KioskSessionStore: KioskOpenSessions {}
