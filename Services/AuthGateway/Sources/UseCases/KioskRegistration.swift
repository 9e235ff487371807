import AppRecords
import FaceGateCore
import Foundation
import KioskSessionRecords

/// The unfinished kiosk sessions a kiosk opened (`KioskSessionStore`), to end them when it is revoked.
protocol KioskOpenSessions: Sendable {
    func openSessions(ofKiosk kioskId: UUID, appId: UUID) async throws -> [UUID]
}

/// Registered kiosks, without HTTP. A kiosk is a device the operator trusts to serve walk-ups: it is known by the RFC 7638
/// thumbprint of its P-256 DPoP key, optionally pinned to client addresses, and nothing but a live kiosk's key may use
/// kiosk login or onboarding (`KIOSK_NOT_REGISTERED`). Revoking a kiosk refuses its next request and cancels the
/// sessions it left open.
struct KioskRegistration: Sendable {
    let registry: any KioskRegistry
    let openSessions: any KioskOpenSessions
    let commands: any KioskCommands

    struct NewKiosk: Decodable, Sendable {
        var name: String
        var jkt: String
        var allowedAddresses: [String]?
    }

    /// A kiosk as the API shows it.
    struct View: Codable, Sendable, Equatable {
        var kioskId: String
        var name: String
        var jkt: String
        var allowedAddresses: [String]?
        var createdAt: Date
        var revokedAt: Date?

        init(_ kiosk: RegisteredKiosk) {
            (kioskId, name, jkt, allowedAddresses, createdAt, revokedAt) =
                (kiosk.id.wire, kiosk.name, kiosk.jkt, kiosk.allowedAddresses, kiosk.createdAt, kiosk.revokedAt)
        }
    }

    /// `CONFLICT` when the key is already live in another kiosk of the app.
    func register(_ new: NewKiosk, app: AppRecord, draft: inout TransactionDraft) async throws -> View {
        let name = new.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(name.count) else { throw APIError(.invalidRequest, "name must be 1–200 characters") }
        guard new.jkt.utf8.count == 43, new.jkt.utf8.allSatisfy(Self.isBase64URL) else {
            throw APIError(.invalidRequest, "jkt must be the RFC 7638 SHA-256 thumbprint of the kiosk's P-256 key: 43 base64url characters")
        }
        var addresses: [String]?
        if let allowed = new.allowedAddresses {
            guard (1...32).contains(allowed.count) else { throw APIError(.invalidRequest, "allowedAddresses holds 1–32 addresses, or is left out") }
            addresses = try allowed.map { text in
                guard let address = IPAddress.canonical(text) else { throw APIError(.invalidRequest, "allowedAddresses: \(text) is not an IP address") }
                return address
            }
        }
        let kiosk = RegisteredKiosk(id: UUID(), appId: app.id, name: name, jkt: new.jkt, allowedAddresses: addresses,
                                    createdAt: Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))
        guard try await registry.register(kiosk) else {
            throw APIError(.conflict, "this key is already registered to a live kiosk of the app; revoke that one first")
        }
        draft.deviceId = kiosk.jkt
        draft.detail = ["kioskId": kiosk.id.wire, "name": name]
        return View(kiosk)
    }

    func list(app: AppRecord) async throws -> [View] { try await registry.kiosks(appId: app.id).map(View.init) }

    /// Revokes the kiosk and cancels every session it left open; `NOT_FOUND` when the app has no such kiosk.
    func revoke(_ id: UUID, app: AppRecord, draft: inout TransactionDraft) async throws {
        guard let kiosk = try await registry.revoke(id, appId: app.id) else { throw APIError(.notFound, "no such kiosk") }
        draft.deviceId = kiosk.jkt
        draft.detail = ["kioskId": id.wire]
        // A session the orchestrator cannot cancel now is refused at its next step anyway (its kiosk is revoked).
        var ended = 0
        for session in try await openSessions.openSessions(ofKiosk: id, appId: app.id) {
            if (try? await commands.send(KioskCommand(sessionId: session, appId: app.id, kioskId: id, .cancel))) != nil { ended += 1 }
        }
        draft.detail["sessionsEnded"] = String(ended)
    }

    /// The live kiosk of the app whose key signed the request (`jkt`, nil when no proof was sent), calling from
    /// `address`; anything else is `KIOSK_NOT_REGISTERED`.
    func kiosk(app: AppRecord, jkt: String?, address: String) async throws -> RegisteredKiosk {
        guard let jkt, let kiosk = try await registry.live(appId: app.id, jkt: jkt) else {
            throw APIError(.kioskNotRegistered, "kiosk routes need a DPoP proof by the key of a kiosk registered to this app (POST /v1/apps/{appId}/kiosks)")
        }
        if let allowed = kiosk.allowedAddresses, !allowed.contains(IPAddress.canonical(address) ?? address) {
            throw APIError(.kioskNotRegistered, "this kiosk is not registered for calls from this address")
        }
        return kiosk
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }
}

/// IP address text in one form, so that `::FFFF:10.0.0.1`-style spellings compare equal to what the server sees.
enum IPAddress {
    static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return format(AF_INET, &v4, Int(INET_ADDRSTRLEN)) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return format(AF_INET6, &v6, Int(INET6_ADDRSTRLEN)) }
        return nil
    }

    private static func format<T>(_ family: Int32, _ address: inout T, _ length: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: length)
        guard inet_ntop(family, &address, &buffer, socklen_t(length)) != nil else { return nil }
        return String(cString: buffer)
    }
}
