import AppRecords
import AuditRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import IdentityRecords
import ServiceKit
import Synchronization

// The use-case tests' own doubles: the gateway's ports (onboarding sessions, the matcher, broadcasts, the module gate,
// the audit reads). The stores' twins live in their persistence modules (`InMemoryTwins.swift`), and `StoreContractTests`
// runs one suite against each of them and against its PostgreSQL store.

/// The twins' clock, as the tests name it.
typealias FakeClock = TwinClock

extension InMemoryApps {
    /// An app store whose deletions take the app's people from `roster`.
    convenience init(clock: FakeClock, roster: InMemoryUserRoster) {
        self.init(clock: clock, erasePeople: { roster.eraseApp($0) })
    }
}

/// The sessions that onboarded customers, as the kiosk-orchestrator would have completed them.
final class InMemoryOnboardingSessions: OnboardingSessions {
    private let sessions = Mutex<[UUID: UUID]>([:])

    func completed(_ session: UUID, onboarding customer: UUID) { sessions.withLock { $0[customer] = session } }

    func onboardingSession(of customer: UUID, appId: UUID) async throws -> UUID? { sessions.withLock { $0[customer] } }
}

/// What a callback was called with, in order.
final class Calls<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    var all: [Element] { items.withLock { $0 } }
    func record(_ item: Element) { items.withLock { $0.append(item) } }
}

/// The API error code `body` fails with (an `APIError`, or the envelope of an `HTTPError`): nil when it succeeds,
/// INTERNAL for any other error.
func errorCode<T>(_ body: () async throws -> T) async -> ErrorCode? {
    do {
        _ = try await body()
        return nil
    } catch let error as APIError {
        return error.code
    } catch let error as HTTPError {
        return ErrorCode(rawValue: error.code) ?? .internalError
    } catch {
        return .internalError
    }
}

/// Admits every call (the quota rules are `AppStore`'s: StoreContracts.AppStoreContract).
struct AdmitEverything: ModuleAdmission {
    func admit(_ app: AppRecord, module: Module) async throws {}
}

/// Answers face jobs from a script the test writes (what the matcher would have found), and keeps the jobs it got.
/// The matcher itself is tested on the real models and photos (FaceEngineTests, IntegrationTests).
final class ScriptedMatcher: FaceMatching {
    private let state = Mutex<(answers: [FaceJobResult], jobs: [FaceJob], messageIds: [String?])>(([], [], []))

    var jobs: [FaceJob] { state.withLock { $0.jobs } }
    var messageIds: [String?] { state.withLock { $0.messageIds } }

    func answer(_ results: FaceJobResult...) { state.withLock { $0.answers += results } }

    func match(_ job: FaceJob, messageId: String?) async throws -> FaceJobResult {
        try state.withLock { state in
            state.jobs.append(job)
            state.messageIds.append(messageId)
            guard !state.answers.isEmpty else { throw APIError(.serviceUnavailable, "face matching is unavailable right now; try again") }
            return state.answers.removeFirst()
        }
    }
}

/// The gallery changes a use case broadcast, in order.
final class RecordedBroadcasts: GalleryBroadcast {
    let changes = Calls<GalleryChange>()
    func broadcast(_ change: GalleryChange) async { changes.record(change) }
}

/// Audit records in memory for `AuditTrail`'s tests: pages filter by app list, kind, outcome and user, newest first;
/// `verify` answers an intact chain of the app's rows and records the checkpoint it was given. The chain itself is
/// recomputed only by `TransactionLog` (IntegrationTests' AuditTests tamper with real rows).
final class InMemoryAuditRecords: AuditRecords {
    private struct State {
        var records: [TransactionRecord] = []
        var heads: [UUID: (count: Int64, hash: [UInt8])] = [:]
        var asked: [(filter: TransactionLog.Filter, limit: Int)] = []
    }
    private let state = Mutex(State())
    let verified = Calls<AuditCheckpoint?>()

    /// Appends a row to its app's chain (the head counts it; its hash stands in for the keyed one).
    func add(_ record: TransactionRecord) {
        state.withLock { state in
            state.records.append(record)
            let head = state.heads[record.appId] ?? (0, TransactionRecord.genesisHash)
            state.heads[record.appId] = (head.count + 1, SHA256.hash(head.hash + Array(record.id.wire.utf8)))
        }
    }
    func setHead(_ appId: UUID, count: Int64, hash: [UInt8]) { state.withLock { $0.heads[appId] = (count, hash) } }
    /// Every page asked for: the filter and the limit.
    var asked: [(filter: TransactionLog.Filter, limit: Int)] { state.withLock { $0.asked } }

    func page(_ filter: TransactionLog.Filter, before cursor: (time: Date, id: UUID)?, limit: Int) async throws -> [TransactionRecord] {
        state.withLock { state in
            state.asked.append((filter, limit))
            let apps = filter.appIds.map { Set($0.split(separator: ",").map(String.init)) }
            // One closure with its conditions spelled out: a chain of optional comparisons in separate filters took
            // the type checker 20 s.
            func kept(_ record: TransactionRecord) -> Bool {
                if let apps, !apps.contains(record.appId.wire) { return false }
                if let kind = filter.kind, record.kind != kind { return false }
                if let outcome = filter.outcome, record.outcome != outcome { return false }
                if let userId = filter.userId, record.userId != userId { return false }
                if let deviceId = filter.deviceId, record.deviceId != deviceId { return false }
                if let from = filter.from, record.createdAt < from { return false }
                if let to = filter.to, record.createdAt >= to { return false }
                if let cursor, (cursor.time, cursor.id.uuidString) <= (record.createdAt, record.id.uuidString) { return false }
                return true
            }
            let newestFirst = state.records.filter(kept).sorted { (a: TransactionRecord, b: TransactionRecord) in
                (a.createdAt, a.id.uuidString) > (b.createdAt, b.id.uuidString)
            }
            return Array(newestFirst.prefix(limit))
        }
    }

    func head(of appId: UUID) async throws -> (count: Int64, hash: [UInt8])? { state.withLock { $0.heads[appId] } }

    func lengths() async throws -> [(appId: UUID, count: Int64)] { state.withLock { $0.heads.map { ($0.key, $0.value.count) } } }

    func verify(appId: UUID, checkpoint: AuditCheckpoint?, acceptUnkeyed: Bool) async throws -> TransactionLog.Verification {
        verified.record(checkpoint)
        let checked = state.withLock { state in state.records.filter { $0.appId == appId }.count }
        return TransactionLog.Verification(appId: appId.wire, ok: true, checked: checked)
    }
}
