import FaceGateCore
import Foundation
import HTTPServer

/// The tickets that let a new device key be bound to a user (RFC 9449 DPoP keys): asked for by the app server, or by a
/// device already bound to the user.
struct DeviceKeyRoutes: RouteCollection {
    let bindingTickets: BindingTickets
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        routes.group(\.appServerOrClient).add("POST", "/v1/device-bindings", answers: [BindingTickets.Issued.self], doors: [.bindingTicket],
                                              maxBodyBytes: 4096) { request, context in
            struct Body: Decodable {
                var userId: UUID?
                var employeeNumber: String?
            }
            let body = try request.decodeJSON(Body.self)
            let caller = context.caller
            return try await context.recorded(kind: "device.binding.ticket", appId: caller.app.id) { draft in
                let issuer: BindingTickets.Issuer = caller.isAppServer ? .appServer : .boundDevice { try await devices.device(request, app: caller.app) }
                return .json(try await bindingTickets.issue(app: caller.app, by: issuer, userId: body.userId, employeeNumber: body.employeeNumber,
                                                            draft: &draft), status: 201)
            }
        }
    }
}
