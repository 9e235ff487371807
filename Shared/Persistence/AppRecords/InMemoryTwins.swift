import Crypto
import FaceGateCore
import Foundation
import PostgresClient
import Synchronization

// In-memory twins of this module's stores, on a clock the test moves (`TwinClock`): for use-case and worker tests
// without PostgreSQL. `StoreContractTests` runs one suite against each and against its PostgreSQL store, so a twin
// that drifts from the real behaviour fails there.

/// Spent token ids, one namespace for every app as in PostgreSQL (the id is the key).
package final class InMemorySpentTokenIds: SpentTokenIds {
    package init() {}

    private let spentIds = Mutex<Set<String>>([])

    package func spend(_ id: String, appId: UUID, expiresAt: Int64) async throws -> Bool { spentIds.withLock { $0.insert(id).inserted } }

    package func spending(_ id: String, appId: UUID, expiresAt: Int64) -> PostgresStep<Void> {
        .computed { [self] in
            guard try await spend(id, appId: appId, expiresAt: expiresAt) else { throw TokenIdSpentBefore() }
        }
    }
}

/// `AppStore` in memory, on the test's clock (calls are counted per app and module; a test stays inside one day). The
/// sealed CTID keys are kept beside the records, as the `apps` table keeps them.
package final class InMemoryApps: AppStore {
    private struct State { var apps: [UUID: AppRecord] = [:]; var sealedKeys: [UUID: [UInt8]] = [:]; var calls: [String: Int] = [:] }
    private let state = Mutex(State())
    package let clock: TwinClock
    /// What a deletion takes with the app: its people and their templates (the identities' twin, as the cascade from `apps`).
    package let erasePeople: (@Sendable (UUID) -> (users: Int, templates: [GalleryChange]))?

    package init(clock: TwinClock, erasePeople: (@Sendable (UUID) -> (users: Int, templates: [GalleryChange]))? = nil) {
        self.clock = clock
        self.erasePeople = erasePeople
    }

    package func sealedCTIDKey(of app: UUID) -> [UInt8]? { state.withLock { $0.sealedKeys[app] } }

    package func create(_ id: UUID, name: String, secretHash: [UInt8], ctidKeySealed: [UInt8], faceModel: FaceModel, settings: AppSettings) async throws {
        let now = clock.now
        state.withLock { state in
            precondition(state.apps[id] == nil, "an app id is new")
            state.apps[id] = AppRecord(id: id, name: name, secretHash: secretHash, modules: settings.modules, faceModel: faceModel,
                                       matchThreshold: settings.matchThreshold, liveness: settings.liveness,
                                       deviceBinding: settings.deviceBinding, deviceBindingPolicy: settings.deviceBindingPolicy,
                                       kioskApproval: settings.kioskApproval, quotas: settings.quotas,
                                       keepEnrollmentPhotos: settings.keepEnrollmentPhotos, createdAt: now)
            state.sealedKeys[id] = ctidKeySealed
        }
    }

    package func update(_ id: UUID, settings: AppSettings) async throws {
        state.withLock { state in
            guard var app = state.apps[id] else { return }
            app.modules = settings.modules
            app.matchThreshold = settings.matchThreshold
            app.liveness = settings.liveness
            app.deviceBinding = settings.deviceBinding
            app.deviceBindingPolicy = settings.deviceBindingPolicy
            app.kioskApproval = settings.kioskApproval
            app.quotas = settings.quotas
            app.keepEnrollmentPhotos = settings.keepEnrollmentPhotos
            state.apps[id] = app
        }
    }

    package func rotateSecret(_ id: UUID, to secretHash: [UInt8], graceSeconds: Int) async throws {
        let now = clock.now
        state.withLock { state in
            guard var app = state.apps[id] else { return }
            app.previousSecretHash = app.secretHash
            app.previousSecretValidUntil = now.addingTimeInterval(Double(graceSeconds))
            app.secretHash = secretHash
            app.secretRotatedAt = now
            state.apps[id] = app
        }
    }

    package func revokePreviousSecret(_ id: UUID) async throws -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard var app = state.apps[id], (app.previousSecretValidUntil ?? .distantPast) > now else { return false }
            app.previousSecretValidUntil = now
            state.apps[id] = app
            return true
        }
    }

    package func switchModel(_ id: UUID, from: FaceModel, to model: FaceModel, threshold: Float) async throws -> Bool {
        state.withLock { state in
            guard var app = state.apps[id], app.faceModel == from else { return false }
            app.faceModel = model
            app.matchThreshold = threshold
            state.apps[id] = app
            return true
        }
    }

    package func all(covered: (UUID) -> Bool) async throws -> [AppRecord] {
        state.withLock { state in
            state.apps.values.sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }.prefix(1000).filter { covered($0.id) }
        }
    }

    package func find(_ id: UUID) async throws -> AppRecord? { state.withLock { $0.apps[id] } }

    package func delete(_ id: UUID) async throws -> (users: Int, templates: [GalleryChange])? {
        guard state.withLock({ $0.apps.removeValue(forKey: id) }) != nil else { return nil }
        return erasePeople?(id) ?? (0, [])
    }

    package func admit(_ app: AppRecord, module: Module) async throws {
        if let refusal = try await admission(app, module: module).run() { throw refusal }
    }

    package func admission(_ app: AppRecord, module: Module) throws -> PostgresStep<APIError?> {
        try app.ensureEnabled(module)
        return .computed { [self] in
            let calls = state.withLock { state in
                state.calls["\(app.id.wire)/\(module.rawValue)", default: 0] += 1
                return state.calls["\(app.id.wire)/\(module.rawValue)"]!
            }
            return app.quotaRefusal(module, calls: calls)
        }
    }
}

/// `ApiKeyStore` in memory, on the test's clock.
package final class InMemoryApiKeys: ApiKeyStore {
    private struct Key { var record: ApiKeyRecord; var role: String; var hash: [UInt8] }
    private let keys = Mutex<[Key]>([])
    package let clock: TwinClock

    package init(clock: TwinClock) { self.clock = clock }

    package func live(hash: [UInt8]) async throws -> (id: UUID, role: String, appIds: [UUID]?)? {
        let now = clock.now
        return keys.withLock { keys in
            keys.first { $0.hash == hash && $0.record.revokedAt == nil && ($0.record.expiresAt.map { $0 > now } ?? true) }
                .map { (id: $0.record.id, role: $0.role, appIds: $0.record.appIds) }
        }
    }

    package func create(id: UUID, role: String, name: String, hash: [UInt8], appIds: [UUID]?, expiresAt: Date?) async throws {
        let now = clock.now
        keys.withLock { $0.append(Key(record: ApiKeyRecord(id: id, name: name, appIds: appIds, createdAt: now, expiresAt: expiresAt), role: role, hash: hash)) }
    }

    package func list(role: String) async throws -> [ApiKeyRecord] {
        keys.withLock { keys in
            keys.filter { $0.role == role }.map(\.record).sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
        }
    }

    package func revoke(_ id: UUID, role: String) async throws -> Bool {
        let now = clock.now
        return keys.withLock { keys in
            guard let index = keys.firstIndex(where: { $0.record.id == id && $0.role == role }) else { return false }
            keys[index].record.revokedAt = keys[index].record.revokedAt ?? now
            return true
        }
    }

    package func forget(app: UUID) async throws {
        let now = clock.now
        keys.withLock { keys in
            for index in keys.indices where keys[index].role == "admin" && keys[index].record.appIds?.contains(app) == true {
                if keys[index].record.appIds == [app] { keys[index].record.revokedAt = keys[index].record.revokedAt ?? now }
                keys[index].record.appIds?.removeAll { $0 == app }
            }
        }
    }
}

/// Remembered requests in memory, on the test's clock; held to PostgreSQL's by the contract tests.
package final class InMemoryIdempotencyRecords: IdempotencyRecords {
    private struct Entry { var record: IdempotencyRecord; var createdAt: Date }
    private let clock: TwinClock
    private let entries = Mutex<[IdempotencyRecordID: Entry]>([:])

    package init(clock: TwinClock) { self.clock = clock }

    package func claim(_ id: IdempotencyRecordID, requestHash: [UInt8], retentionSeconds: Int, abandonedSeconds: Int) async throws -> Bool {
        let now = clock.now
        return entries.withLock { entries in
            if let entry = entries[id] {
                let age = now.timeIntervalSince(entry.createdAt)
                guard age > Double(retentionSeconds) || (entry.record.status == nil && age > Double(abandonedSeconds)) else { return false }
            }
            entries[id] = Entry(record: IdempotencyRecord(requestHash: requestHash), createdAt: now)
            return true
        }
    }

    package func record(_ id: IdempotencyRecordID) async throws -> IdempotencyRecord? { entries.withLock { $0[id]?.record } }

    package func settle(_ id: IdempotencyRecordID, status: Int, sealedAnswer: [UInt8]) async throws {
        entries.withLock { entries in
            entries[id]?.record.status = status
            entries[id]?.record.sealedAnswer = sealedAnswer
        }
    }

    package func release(_ id: IdempotencyRecordID) async throws {
        entries.withLock { entries in
            if let entry = entries[id], entry.record.status == nil { entries[id] = nil }
        }
    }

    package func sweep(olderThanSeconds: Int) async throws {
        let now = clock.now
        entries.withLock { entries in entries = entries.filter { now.timeIntervalSince($0.value.createdAt) <= Double(olderThanSeconds) } }
    }
}

/// Registered kiosks' keys, by app and thumbprint.
package final class InMemoryKioskKeys: KioskKeys {
    package init() {}

    private let keys = Mutex<Set<String>>([])

    package func register(appId: UUID, jkt: String) { keys.withLock { _ = $0.insert(appId.wire + "/" + jkt) } }

    package func isLiveKiosk(appId: UUID, jkt: String) async throws -> Bool { keys.withLock { $0.contains(appId.wire + "/" + jkt) } }
}
