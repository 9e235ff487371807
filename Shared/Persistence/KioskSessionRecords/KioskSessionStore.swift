import AuditRecords
import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// What a kiosk session keeps between steps (`kiosk_sessions.data`). Biometric material is sealed with
/// the platform key and erased when the session ends; the document photos themselves are never stored.
public struct KioskSessionData: Codable, Sendable {
    /// The most frontal selfie frame, sealed: probe of the face match and the image enrolled on approval.
    public var selfie: Data?
    /// Whether the selfie passed an active liveness check (false when the app's kiosk liveness is off).
    public var livenessPassed: Bool?
    /// The document portrait's template, sealed with the platform key (a `verify` job's reference).
    public var portrait: Data?
    public var document: KioskOCRData?
    public var faceDistance: Float?
    public var customerId: UUID?
    public var result: KioskResult?
    /// Failed attempts per step, for the retake limit.
    public var failures: [String: Int]?

    public init() {}
}

/// A `kiosk_sessions` row.
public struct KioskSession: Sendable {
    public var id: UUID
    public var appId: UUID
    public var deviceId: String?
    /// The registered kiosk that created it (nil for sessions from before kiosks were registered).
    public var kioskId: UUID?
    public var state: KioskState
    public var data: KioskSessionData
    public var expiresAt: Date

    public init(id: UUID, appId: UUID, deviceId: String?, kioskId: UUID? = nil, state: KioskState, data: KioskSessionData, expiresAt: Date) {
        self.id = id
        self.appId = appId
        self.deviceId = deviceId
        self.kioskId = kioskId
        self.state = state
        self.data = data
        self.expiresAt = expiresAt
    }

    public var isExpired: Bool { !state.isFinal && expiresAt < Date() }
}

/// Kiosk sessions and their events (`kiosk_sessions`, `kiosk_events`): the kiosk-orchestrator creates, moves, expires
/// and erases them; the gateway reads them to serve clients (and its user erasure deletes a customer's sessions).
public struct KioskSessionStore: Sendable {
    private let database: PostgresPool

    public init(database: PostgresPool) {
        self.database = database
    }

    public func session(_ id: UUID, lock connection: PostgresConnection? = nil) async throws -> KioskSession? {
        var sql: PostgresQuery = """
            SELECT id, app_id, device_id, kiosk_id, state, data::text AS data, expires_at FROM kiosk_sessions WHERE id = \(id)
            """
        let rows: PostgresRows
        if let connection {
            sql.sql += " FOR UPDATE"
            rows = try await connection.query(sql)
        } else {
            rows = try await database.query(sql)
        }
        guard let row = rows.first else { return nil }
        guard let state = KioskState(rawValue: try row.decode("state", as: String.self)) else {
            throw KioskStoreError.corrupt("unknown state")
        }
        return KioskSession(id: try row.decode("id"), appId: try row.decode("app_id"), deviceId: try row.decode("device_id", as: String?.self),
                            kioskId: try row.decode("kiosk_id", as: UUID?.self), state: state, data: try FaceGateJSON.decode(KioskSessionData.self, from: Array(try row.decode("data", as: String.self).utf8)),
                            expiresAt: try row.decode("expires_at"))
    }

    /// Creates the session at the selfie step unless one with this id exists (a redelivered create).
    public func create(_ id: UUID, appId: UUID, tokenHash: [UInt8], deviceId: String?, kioskId: UUID?, ttlSeconds: Int) async throws {
        let data = String(decoding: try FaceGateJSON.encode(KioskSessionData()), as: UTF8.self)
        _ = try await database.query("""
            INSERT INTO kiosk_sessions (id, app_id, token_hash, device_id, kiosk_id, state, data, expires_at)
            VALUES (\(id), \(appId), \(tokenHash), \(deviceId), \(kioskId), \(KioskState.selfie.rawValue), \(data)::jsonb,
                    now() + make_interval(secs => \(ttlSeconds)))
            ON CONFLICT (id) DO NOTHING
            """)
    }

    /// Moves the session from `expected` to `state` with `data`, appends `events` after its last one, notes the customer
    /// (once), and inserts `transaction` with `log`, all in one transaction; nil, changing nothing, when the session is
    /// no longer in `expected` (another command moved it). Answers the events as stored.
    public func move(_ id: UUID, from expected: KioskState, to state: KioskState, data: KioskSessionData,
                     events: [(KioskEventName, KioskEventData)], customerId: UUID?, transaction: TransactionRecord?,
                     log: TransactionLog) async throws -> [KioskEvent]? {
        let dataText = String(decoding: try FaceGateJSON.encode(data), as: UTF8.self)
        let encoded = try events.map { ($0.0, String(decoding: try FaceGateJSON.encode($0.1), as: UTF8.self), $0.1) }
        return try await database.withTransaction { connection in
            guard let current = try await session(id, lock: connection), current.state == expected else { return nil }
            var seq = try await connection.query("SELECT coalesce(max(seq), 0) AS seq FROM kiosk_events WHERE session_id = \(id)")
                .first!.decode("seq", as: Int.self)
            var stored: [KioskEvent] = []
            for (name, text, value) in encoded {
                seq += 1
                let row = try await connection.query("""
                    INSERT INTO kiosk_events (session_id, seq, name, data) VALUES (\(id), \(seq), \(name.rawValue), \(text)::jsonb)
                    RETURNING created_at
                    """)
                stored.append(KioskEvent(seq: seq, event: name, data: value, at: try row.first!.decode("created_at")))
            }
            _ = try await connection.query("""
                UPDATE kiosk_sessions SET state = \(state.rawValue), data = \(dataText)::jsonb,
                       customer_id = coalesce(customer_id, \(customerId)), updated_at = now()
                WHERE id = \(id)
                """)
            if let transaction { try await log.insert(transaction, in: connection) }
            return stored
        }
    }

    /// Up to `limit` sessions of every app that expired unfinished, soonest expired first (read across apps).
    public func expiredUnfinished(limit: Int) async throws -> [(id: UUID, appId: UUID)] {
        try await Tenant.acrossApps {
            try await database.query("""
                SELECT id, app_id FROM kiosk_sessions
                WHERE state NOT IN ('completed', 'failed', 'cancelled', 'expired') AND expires_at < now()
                ORDER BY expires_at LIMIT \(limit)
                """).map { (try $0.decode("id"), try $0.decode("app_id")) }
        }
    }

    /// The unfinished sessions the kiosk opened (to end them when it is revoked).
    public func openSessions(ofKiosk kioskId: UUID, appId: UUID) async throws -> [UUID] {
        try await database.query("""
            SELECT id FROM kiosk_sessions
            WHERE app_id = \(appId) AND kiosk_id = \(kioskId) AND state NOT IN ('completed', 'failed', 'cancelled', 'expired')
            """).map { try $0.decode("id", as: UUID.self) }
    }

    /// Deletes the customer's sessions, with their events, inside the caller's transaction (the user's erasure).
    public static func eraseSessions(ofCustomer customer: UUID, appId: UUID, in connection: PostgresConnection) async throws {
        _ = try await connection.query("DELETE FROM kiosk_sessions WHERE app_id = \(appId) AND customer_id = \(customer)")
    }

    /// Deletes the sessions of every app that ended more than `seconds` ago, with their events; answers how many.
    public func eraseFinished(olderThan seconds: Int) async throws -> Int {
        try await Tenant.acrossApps {
            try await database.query("""
                DELETE FROM kiosk_sessions
                WHERE state IN ('completed', 'failed', 'cancelled', 'expired') AND updated_at < now() - make_interval(secs => \(seconds))
                """).affectedRows
        }
    }

    /// The latest completed session that created `customer` as a new customer (not one that found an existing one).
    public func onboardingSession(of customer: UUID, appId: UUID) async throws -> UUID? {
        try await database.query("""
            SELECT id FROM kiosk_sessions
            WHERE app_id = \(appId) AND customer_id = \(customer) AND state = 'completed'
              AND coalesce((data->'result'->>'existingUser')::boolean, false) = false
            ORDER BY updated_at DESC, created_at DESC LIMIT 1
            """).first.map { try $0.decode("id", as: UUID.self) }
    }

    /// Events with `seq` above `after`, oldest first.
    public func events(of id: UUID, after seq: Int = 0, limit: Int = 1000) async throws -> [KioskEvent] {
        let rows = try await database.query("""
            SELECT seq, name, data::text AS data, created_at FROM kiosk_events
            WHERE session_id = \(id) AND seq > \(seq) ORDER BY seq LIMIT \(limit)
            """)
        return try rows.map { row in
            guard let name = KioskEventName(rawValue: try row.decode("name", as: String.self)) else { throw KioskStoreError.corrupt("unknown event") }
            return KioskEvent(seq: try row.decode("seq"), event: name,
                              data: try FaceGateJSON.decode(KioskEventData.self, from: Array(try row.decode("data", as: String.self).utf8)),
                              at: try row.decode("created_at"))
        }
    }

    /// The session as clients see it: state, the steps taken (from its events) and the result.
    public func view(of session: KioskSession, events produced: [KioskEvent]? = nil) async throws -> KioskSessionView {
        let steps = try await events(of: session.id).compactMap { event in
            event.event.stepName.map { KioskSessionView.Step(name: $0, success: event.data.success ?? false, at: event.at) }
        }
        return KioskSessionView(interviewId: session.id, state: session.isExpired ? .expired : session.state, steps: steps,
                                result: session.data.result, expiresAt: session.expiresAt, events: produced)
    }
}

public enum KioskStoreError: Error, CustomStringConvertible {
    case corrupt(String)
    public var description: String {
        switch self {
        case .corrupt(let what): "kiosk session row is corrupt: \(what)"
        }
    }
}
