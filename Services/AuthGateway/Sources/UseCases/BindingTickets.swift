import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// One-time tickets that let one new device key be bound to one user (`POST /v1/device-bindings`), without HTTP. The
/// app server asks for one after signing its user in by its own means; or a device key already bound to the user asks
/// (to show it as a code on the old phone).
struct BindingTickets: Sendable {
    let bindings: any DeviceBindingStore
    let users: any UserDirectory
    let ttlSeconds: Int

    /// Who asks.
    enum Issuer: Sendable {
        case appServer
        /// A device of the app, proven by its key when asked (after the app is found to bind keys at all).
        case boundDevice(@Sendable () async throws -> ClientDevice)

        var name: String {
            switch self {
            case .appServer: "appServer"
            case .boundDevice: "boundDevice"
            }
        }
    }

    struct Issued: Codable, Sendable, TrustAnswer {
        var bindingTicket: String
        var userId: String
        var expiresIn: Int
    }

    /// A ticket for the user named by `userId` or `employeeNumber`; a device bound to exactly one user may name none.
    /// A device asks only on a `dpop` app and only for a user its key is bound to: a key bound to no one is refused before
    /// anything is looked up, and a user it is not bound to, known or not, gets the same `FORBIDDEN` (no directory of
    /// numbers). The app server gets `NOT_FOUND` for an unknown user; naming nobody is `INVALID_REQUEST`.
    func issue(app: AppRecord, by issuer: Issuer, userId: UUID?, employeeNumber: String?, draft: inout TransactionDraft) async throws -> Issued {
        var candidates: [UUID]?
        if case .boundDevice(let prove) = issuer {
            guard app.deviceBinding == .dpop else { throw APIError(.forbidden, "devices approve new keys only on apps with deviceBinding dpop") }
            let device = try await prove()
            draft.deviceId = device.id
            let bound = try await bindings.boundUsers(appId: app.id, device: device)
            guard !bound.isEmpty else { throw Self.notBound }
            candidates = bound
        }
        let user: UUID
        if let userId {
            user = userId
        } else if let employeeNumber {
            guard let id = try await users.user(appId: app.id, employeeNumber: employeeNumber) else {
                throw candidates == nil ? APIError(.notFound, "no such user") : Self.notBound
            }
            user = id
        } else if let only = candidates, only.count == 1 {
            user = only[0]
        } else {
            throw APIError(.invalidRequest, "name the user: userId or employeeNumber")
        }
        if let candidates, !candidates.contains(user) { throw Self.notBound }
        draft.userId = user
        guard try await users.exists(user, appId: app.id) else { throw APIError(.notFound, "no such user") }
        let ticket = "fbt_" + Base64URL.encode(SecureRandom.bytes(32))
        try await bindings.issueTicket(key: BindingTicketCheck.key(ticket), appId: app.id, user: user, issuer: issuer.name, ttlSeconds: ttlSeconds)
        draft.detail["issuer"] = issuer.name
        return Issued(bindingTicket: ticket, userId: user.wire, expiresIn: ttlSeconds)
    }

    /// The one answer a device gets for any user its key is not bound to.
    private static let notBound = APIError(.forbidden, "this device key is not bound to that user")
}
