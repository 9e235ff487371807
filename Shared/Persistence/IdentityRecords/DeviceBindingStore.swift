import Crypto
import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// The device a client request comes from.
package struct ClientDevice: Sendable {
    /// Its identity everywhere (devices, lockouts, audit rows, token claims, device credentials): the RFC 7638
    /// thumbprint of the key that signed the request on a `dpop` app, the `X-Device-Id` header on a `header` app.
    package var id: String
    /// True when `id` is a key the request proved it holds.
    package var isKey: Bool
    /// `X-Device-Id` sent next to a proof: a label for people, never an identity.
    package var label: String?

    package init(id: String, isKey: Bool, label: String? = nil) {
        self.id = id
        self.isKey = isKey
        self.label = label
    }

    /// The key thumbprint, for `cnf.jkt`.
    package var thumbprint: String? { isKey ? id : nil }
}

/// A face login that found a face on a device not yet bound to it: the users the face may be, until the person
/// claims one with their employee number (`POST /v1/face-login/confirm`).
package struct PendingConfirmation: Sendable {
    package struct Candidate: Codable, Sendable, Equatable {
        package var userId: UUID
        package var distance: Float

        package init(userId: UUID, distance: Float) {
            self.userId = userId
            self.distance = distance
        }
    }

    package var id = UUID()
    package var appId: UUID
    package var deviceId: String
    /// The user the search matched, if it matched one.
    package var userId: UUID?
    package var candidates: [Candidate]
    package var transactionId: UUID
    package var score: Float?
    package var ttlSeconds: Int

    package init(id: UUID = UUID(), appId: UUID, deviceId: String, userId: UUID? = nil, candidates: [Candidate], transactionId: UUID, score: Float? = nil, ttlSeconds: Int) {
        self.id = id
        self.appId = appId
        self.deviceId = deviceId
        self.userId = userId
        self.candidates = candidates
        self.transactionId = transactionId
        self.score = score
        self.ttlSeconds = ttlSeconds
    }
}

/// A confirmation as the confirm call finds it.
package struct ConfirmationState: Sendable {
    package var candidates: [PendingConfirmation.Candidate]
    /// Neither used, voided nor expired.
    package var usable: Bool

    package init(candidates: [PendingConfirmation.Candidate], usable: Bool) {
        self.candidates = candidates
        self.usable = usable
    }
}

/// How a binding ticket (`POST /v1/device-bindings`) must be for a key to be bound under the app's policy.
package struct BindingTicketCheck: Sendable {
    package var ticket: String?
    package var policy: DeviceBindingPolicy

    package init(ticket: String? = nil, policy: DeviceBindingPolicy) {
        self.ticket = ticket
        self.policy = policy
    }

    /// Tickets are stored by their hash: a database reader learns none that works.
    package static func key(_ ticket: String) -> String { "bt_" + Hex.encode(SHA256.hash(ticket)) }

    /// The stored key of the ticket sent; none sent → `BINDING_TICKET_INVALID` saying what the app needs.
    package func key() throws -> String {
        guard let ticket else {
            throw APIError(.bindingTicketInvalid, policy == .boundDevice
                           ? "this app binds a new device only when one of your devices approves it: send its bindingTicket"
                           : "this app binds a new device only with a bindingTicket from the app server (POST /v1/device-bindings)")
        }
        return Self.key(ticket)
    }

    /// Refuses unless the ticket was spent for the user (`spent` nil: not valid for this user, used or expired) and the
    /// policy accepts its issuer: `appServerTicket` takes the app server's; `boundDevice` takes a bound key's, or the app
    /// server's for a user who has no bound key yet (the first device).
    package func accept(_ spent: (issuer: String, userHasKey: Bool)?) throws {
        guard let spent else { throw APIError(.bindingTicketInvalid, "the binding ticket is not valid for this user, used or expired") }
        let accepted = switch policy {
        case .employeeNumber: true
        case .appServerTicket: spent.issuer == "appServer"
        case .boundDevice: spent.issuer == "boundDevice" || (spent.issuer == "appServer" && !spent.userHasKey)
        }
        guard accepted else { throw APIError(.bindingTicketInvalid, "this app's binding policy does not accept a ticket from that issuer") }
    }
}

/// Which users each device is bound to (`devices`), the confirmations that bind a new one (`login_confirmations`)
/// and the tickets a binding may require (`one_time_challenges` of purpose `device-binding`).
package protocol DeviceBindingStore: Sendable {
    /// The users `device` is bound to, latest first (at most 10). On a `dpop` app only bindings made by a key
    /// count: a row bound under the header cannot be claimed by a proof.
    func boundUsers(appId: UUID, device: ClientDevice) async throws -> [UUID]
    /// `boundUsers` as a step to send with other statements.
    func readingBoundUsers(appId: UUID, device: ClientDevice) -> PostgresStep<[UUID]>
    func open(_ confirmation: PendingConfirmation) async throws
    /// The confirmation, if it exists for this app and device.
    func confirmation(_ id: UUID, appId: UUID, deviceId: String) async throws -> ConfirmationState?
    /// Counts a claim that did not match; the `DeviceBindings.mismatchesAllowed`-th voids the confirmation.
    /// Returns the tries left.
    func recordMismatch(_ id: UUID) async throws -> Int
    /// Spends the confirmation (and, with `ticket`, the ticket) and binds the device to `user`: all or nothing.
    /// A confirmation spent meanwhile → `CONFIRMATION_INVALID`.
    func bind(confirmation: UUID, appId: UUID, device: ClientDevice, user: UUID, ticket: BindingTicketCheck?) async throws
    /// Stores a ticket (by `BindingTicketCheck.key`) that lets one new key be bound to `user`.
    func issueTicket(key: String, appId: UUID, user: UUID, issuer: String, ttlSeconds: Int) async throws
    /// The unspent, unexpired ticket of the app stored under `key`: its user and what `BindingTicketCheck.accept` weighs.
    func ticket(key: String, appId: UUID) async throws -> (user: UUID, issuer: String, userHasKey: Bool)?
    /// Spends the confirmation without binding anything (a confirm refused for its ticket).
    func void(_ confirmation: UUID) async throws
}

extension DeviceBindingStore {
    package func readingBoundUsers(appId: UUID, device: ClientDevice) -> PostgresStep<[UUID]> {
        .computed { try await boundUsers(appId: appId, device: device) }
    }
}

package enum DeviceBindings {
    /// Wrong claims a confirmation takes before it is void.
    package static let mismatchesAllowed = 5
}

package struct PostgresDeviceBindings: DeviceBindingStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func boundUsers(appId: UUID, device: ClientDevice) async throws -> [UUID] {
        try await readingBoundUsers(appId: appId, device: device).run()
    }

    package func readingBoundUsers(appId: UUID, device: ClientDevice) -> PostgresStep<[UUID]> {
        PostgresStep(database, """
            SELECT user_id FROM devices WHERE app_id = \(appId) AND device_id = \(device.id) AND key_bound = \(device.isKey)
            ORDER BY confirmed_at DESC LIMIT 10
            """) { rows in try rows.map { try $0.decode("user_id") } }
    }

    /// The stored candidates name users by their wire ids.
    private struct StoredCandidate: Codable { var userId: String; var distance: Float }

    package func open(_ confirmation: PendingConfirmation) async throws {
        let candidates = confirmation.candidates.map { StoredCandidate(userId: $0.userId.wire, distance: $0.distance) }
        _ = try await database.query("""
            INSERT INTO login_confirmations (id, app_id, device_id, user_id, candidates, transaction_id, score, expires_at)
            VALUES (\(confirmation.id), \(confirmation.appId), \(confirmation.deviceId), \(confirmation.userId), \(candidates.jsonText)::jsonb,
                    \(confirmation.transactionId), \(confirmation.score.map { Double($0) }), now() + make_interval(secs => \(confirmation.ttlSeconds)))
            """)
    }

    package func confirmation(_ id: UUID, appId: UUID, deviceId: String) async throws -> ConfirmationState? {
        guard let row = try await database.query("""
            SELECT candidates::text AS candidates, (used_at IS NULL AND voided_at IS NULL AND expires_at > now()) AS usable
            FROM login_confirmations WHERE id = \(id) AND app_id = \(appId) AND device_id = \(deviceId)
            """).first else { return nil }
        let candidates = try FaceGateJSON.decode([PendingConfirmation.Candidate].self, from: Array(try row.decode("candidates", as: String.self).utf8))
        return ConfirmationState(candidates: candidates, usable: try row.decode("usable"))
    }

    package func recordMismatch(_ id: UUID) async throws -> Int {
        let rows = try await database.query("""
            UPDATE login_confirmations SET attempts = attempts + 1,
                   voided_at = CASE WHEN attempts + 1 >= \(DeviceBindings.mismatchesAllowed) THEN now() ELSE voided_at END
            WHERE id = \(id) RETURNING attempts
            """)
        return DeviceBindings.mismatchesAllowed - (try rows.first?.decode("attempts", as: Int.self) ?? DeviceBindings.mismatchesAllowed)
    }

    package func bind(confirmation: UUID, appId: UUID, device: ClientDevice, user: UUID, ticket: BindingTicketCheck?) async throws {
        try await database.withTransaction { connection in
            let used = try await connection.query("""
                UPDATE login_confirmations SET used_at = now()
                WHERE id = \(confirmation) AND used_at IS NULL AND voided_at IS NULL AND expires_at > now()
                """)
            guard used.affectedRows == 1 else { throw APIError(.confirmationInvalid, "the confirmation was already used") }
            if let ticket {
                let key = try ticket.key()
                try ticket.accept(try await connection.query("""
                    UPDATE one_time_challenges SET used_at = now()
                    WHERE id = \(key) AND app_id = \(appId) AND purpose = 'device-binding' AND subject = \(user.wire)
                      AND used_at IS NULL AND expires_at > now()
                    RETURNING data->>'issuer' AS issuer,
                              EXISTS (SELECT 1 FROM devices WHERE app_id = \(appId) AND user_id = \(user) AND key_bound) AS has_key
                    """).first.map { (issuer: try $0.decode("issuer"), userHasKey: try $0.decode("has_key")) })
            }
            _ = try await connection.query("""
                INSERT INTO devices (app_id, device_id, user_id, key_bound) VALUES (\(appId), \(device.id), \(user), \(device.isKey))
                ON CONFLICT DO NOTHING
                """)
        }
    }

    package func ticket(key: String, appId: UUID) async throws -> (user: UUID, issuer: String, userHasKey: Bool)? {
        guard let row = try await database.query("""
            SELECT subject, data->>'issuer' AS issuer,
                   EXISTS (SELECT 1 FROM devices d WHERE d.app_id = \(appId) AND d.user_id::text = c.subject AND d.key_bound) AS has_key
            FROM one_time_challenges c
            WHERE id = \(key) AND app_id = \(appId) AND purpose = 'device-binding' AND used_at IS NULL AND expires_at > now()
            """).first, let user = UUID(uuidString: try row.decode("subject", as: String.self)) else { return nil }
        return (user, try row.decode("issuer"), try row.decode("has_key"))
    }

    package func void(_ confirmation: UUID) async throws {
        _ = try await database.query("UPDATE login_confirmations SET voided_at = coalesce(voided_at, now()) WHERE id = \(confirmation)")
    }

    package func issueTicket(key: String, appId: UUID, user: UUID, issuer: String, ttlSeconds: Int) async throws {
        struct Stored: Encodable { var issuer: String }
        _ = try await database.query("""
            INSERT INTO one_time_challenges (id, app_id, purpose, subject, data, expires_at)
            VALUES (\(key), \(appId), 'device-binding', \(user.wire), \(Stored(issuer: issuer).jsonText)::jsonb,
                    now() + make_interval(secs => \(ttlSeconds)))
            """)
    }
}
