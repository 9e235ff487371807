import FaceGateCore
import Foundation
import HTTPServer

/// Registered kiosks (operator): register a kiosk's DPoP key, list, revoke (`KioskRegistration`). How a kiosk route
/// proves that a live kiosk of the app is calling is `KioskProofs`'.
struct KioskRegistrationRoutes: RouteCollection {
    let kioskRegistration: KioskRegistration

    func boot(_ routes: APIRoutes) {
        let operators = routes.group(\.appOperator, tag: .kiosk)
        operators.add("POST", "/v1/apps/{appId}/kiosks", "registerKiosk",
                      "Register a kiosk by its DPoP key's thumbprint: only a registered, unrevoked kiosk of the app may call the kiosk routes",
                      body: .json(KioskRegistration.NewKiosk.self), answers: [.created(KioskRegistration.View.self, "Registered")],
                      errors: [.conflict], because: [.conflict: "the key is already live in another kiosk of the app"],
                      maxBodyBytes: 8192, idempotent: true) { request, context in
            let (app, new) = (context.caller, try request.decodeJSON(KioskRegistration.NewKiosk.self))
            return try await context.recorded(kind: "kiosk.register", appId: app.id) { draft in
                .json(try await kioskRegistration.register(new, app: app, draft: &draft), status: 201)
            }
        }
        operators.add("GET", "/v1/apps/{appId}/kiosks", "listKiosks", "The app's kiosks, revoked ones included", answers: [.ok(KioskPage.self, "Kiosks")]) { _, context in
            .json(KioskPage(items: try await kioskRegistration.list(app: context.caller)))
        }
        operators.add("DELETE", "/v1/apps/{appId}/kiosks/{kioskId}", "revokeKiosk", "Revoke a kiosk: refused from its next request, its open sessions cancelled", answers: [.noContent("Revoked")]) { request, context in
            let (app, id) = (context.caller, try request.uuidParameter("kioskId"))
            return try await context.recorded(kind: "kiosk.revoke", appId: app.id) { draft in
                try await kioskRegistration.revoke(id, app: app, draft: &draft)
                return .noContent
            }
        }
    }

    struct KioskPage: Codable, DocumentedSchema {
        static let schemaName = "KioskList"
        var items: [KioskRegistration.View]
    }
}
