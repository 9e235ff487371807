import FaceGateCore
import Foundation
import PostgresClient

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
    public var state: KioskState
    public var data: KioskSessionData
    public var expiresAt: Date

    public var isExpired: Bool { !state.isFinal && expiresAt < Date() }
}

/// Reads kiosk sessions and their events; the gateway serves them, the orchestrator answers with them.
public struct KioskSessionStore: Sendable {
    private let database: PostgresPool

    public init(database: PostgresPool) {
        self.database = database
    }

    public func session(_ id: UUID, lock connection: PostgresConnection? = nil) async throws -> KioskSession? {
        var sql: PostgresQuery = """
            SELECT id, app_id, device_id, state, data::text AS data, expires_at FROM kiosk_sessions WHERE id = \(id)
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
                            state: state, data: try FaceGateJSON.decode(KioskSessionData.self, from: Array(try row.decode("data", as: String.self).utf8)),
                            expiresAt: try row.decode("expires_at"))
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
