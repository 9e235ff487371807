import FaceGateCore
import Foundation
import HTTPServer

/// Registered kiosks (operator): register a kiosk's DPoP key, list, revoke (`KioskRegistration`). How a kiosk route
/// proves that a live kiosk of the app is calling is `KioskProofs`'.
struct KioskRegistrationRoutes: RouteCollection {
    let kioskRegistration: KioskRegistration

    func boot(_ routes: APIRoutes) {
        let operators = routes.group(\.appOperator)
        operators.add("POST", "/v1/apps/{appId}/kiosks", answers: [KioskRegistration.View.self], maxBodyBytes: 8192, idempotent: true) { request, context in
            let (app, new) = (context.caller, try request.decodeJSON(KioskRegistration.NewKiosk.self))
            return try await context.recorded(kind: "kiosk.register", appId: app.id) { draft in
                .json(try await kioskRegistration.register(new, app: app, draft: &draft), status: 201)
            }
        }
        operators.add("GET", "/v1/apps/{appId}/kiosks", answers: [KioskPage.self]) { _, context in
            .json(KioskPage(items: try await kioskRegistration.list(app: context.caller)))
        }
        operators.add("DELETE", "/v1/apps/{appId}/kiosks/{kioskId}", answers: []) { request, context in
            let (app, id) = (context.caller, try request.uuidParameter("kioskId"))
            return try await context.recorded(kind: "kiosk.revoke", appId: app.id) { draft in
                try await kioskRegistration.revoke(id, app: app, draft: &draft)
                return .noContent
            }
        }
    }

    struct KioskPage: Encodable { var items: [KioskRegistration.View] }
}
