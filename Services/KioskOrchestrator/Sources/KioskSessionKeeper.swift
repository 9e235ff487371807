import AuditRecords
import FaceGateCore
import Foundation
import KafkaClient
import KioskSessionRecords
import ServiceKit

/// Where the orchestrator keeps its sessions: each move commits the session's next state, its events and the decision's
/// transaction together, then publishes them (`PostgresKioskSessions`; an in-memory twin in the flow's tests).
protocol KioskSessionKeeper: Sendable {
    func session(_ id: UUID) async throws -> KioskSession?
    /// Creates the session at the selfie step unless one with this id exists (a redelivered create).
    func create(_ id: UUID, appId: UUID, tokenHash: [UInt8], deviceId: String?, kioskId: UUID?, ttlSeconds: Int) async throws
    /// Moves the session from `expected` to `state` (nil, changing nothing, when another command moved it first), with
    /// `events` after its last one and `transaction`; answers the events as stored.
    func move(_ id: UUID, appId: UUID, from expected: KioskState, to state: KioskState, data: KioskSessionData,
              events: [(KioskEventName, KioskEventData)], customerId: UUID?, transaction: TransactionRecord?) async throws -> [KioskEvent]?
    /// The session as clients see it, with the events a command produced.
    func view(of session: KioskSession, events produced: [KioskEvent]?) async throws -> KioskSessionView
    /// Up to `limit` sessions of every app that expired unfinished.
    func expiredUnfinished(limit: Int) async throws -> [(id: UUID, appId: UUID)]
    /// Deletes sessions that ended more than `seconds` ago, with their events; answers how many.
    func eraseFinished(olderThan seconds: Int) async throws -> Int
}

/// Sessions in PostgreSQL (`KioskSessionStore`), the transaction committed with their move (`TransactionLog`); after the
/// commit, the events go to `kiosk.events.v1` (without personal data) and the transaction to the audit topic, best effort.
struct PostgresKioskSessions: KioskSessionKeeper {
    let store: KioskSessionStore
    let transactions: TransactionLog
    let producer: KafkaProducer
    let eventsTopic: String
    let logger: Logger

    func session(_ id: UUID) async throws -> KioskSession? { try await store.session(id) }

    func create(_ id: UUID, appId: UUID, tokenHash: [UInt8], deviceId: String?, kioskId: UUID?, ttlSeconds: Int) async throws {
        try await store.create(id, appId: appId, tokenHash: tokenHash, deviceId: deviceId, kioskId: kioskId, ttlSeconds: ttlSeconds)
    }

    func move(_ id: UUID, appId: UUID, from expected: KioskState, to state: KioskState, data: KioskSessionData,
              events: [(KioskEventName, KioskEventData)], customerId: UUID?, transaction: TransactionRecord?) async throws -> [KioskEvent]? {
        guard let stored = try await store.move(id, from: expected, to: state, data: data, events: events, customerId: customerId,
                                                transaction: transaction, log: transactions) else { return nil }
        if let transaction { transactions.publish(transaction) }
        for event in stored {
            do {
                var value = try FaceGateJSON.encode(event.withoutPersonalData)
                value = Array(#"{"interviewId":"\#(id.wire)","appId":"\#(appId.wire)","#.utf8) + value.dropFirst()
                _ = try await producer.send(KafkaRecord(topic: eventsTopic, key: Array(id.wire.utf8), value: value, headers: [TraceContext.header]))
            } catch {
                logger.warning("kiosk event not published", ["kiosk.session": id.wire, "error": "\(error)"])
            }
        }
        return stored
    }

    func view(of session: KioskSession, events produced: [KioskEvent]?) async throws -> KioskSessionView {
        try await store.view(of: session, events: produced)
    }

    func expiredUnfinished(limit: Int) async throws -> [(id: UUID, appId: UUID)] { try await store.expiredUnfinished(limit: limit) }

    func eraseFinished(olderThan seconds: Int) async throws -> Int { try await store.eraseFinished(olderThan: seconds) }
}
