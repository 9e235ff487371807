import FaceGateCore
import Foundation
import HTTPServer

/// The tickets that let a new device key be bound to a user (RFC 9449 DPoP keys): asked for by the app server, or by a
/// device already bound to the user.
struct DeviceKeyRoutes: RouteCollection {
    let bindingTickets: BindingTickets
    let devices: DeviceProofs

    func boot(_ routes: APIRoutes) {
        routes.group(\.appServerOrClient, tag: .deviceBindings).add("POST", "/v1/device-bindings", "issueBindingTicket", """
            A one-time ticket binding one new device key to one user, for the confirmation of a face login. Asked by the app server \
            (Basic auth), or by a device key already bound to the user (Bearer access token + DPoP proof)
            """, body: .json(TicketRequest.self), answers: [.created(BindingTickets.Issued.self, "The ticket")], errors: [.forbidden, .notFound],
                                              because: [.forbidden: "a header app, or a device not bound to that user"],
                                              doors: [.bindingTicket], maxBodyBytes: 4096) { request, context in
            let body = try request.decodeJSON(TicketRequest.self)
            let caller = context.caller
            return try await context.recorded(kind: "device.binding.ticket", appId: caller.app.id) { draft in
                let issuer: BindingTickets.Issuer = caller.isAppServer ? .appServer : .boundDevice { try await devices.device(request, app: caller.app) }
                return .json(try await bindingTickets.issue(app: caller.app, by: issuer, userId: body.userId, employeeNumber: body.employeeNumber,
                                                            draft: &draft), status: 201)
            }
        }
    }

    /// The user; a bound device may send {} when it is bound to one user.
    struct TicketRequest: Decodable, DocumentedSchema {
        static let schemaName = "BindingTicketRequest"
        var userId: UUID?
        var employeeNumber: String?
    }
}
