import FaceGateCore
import Foundation
import Synchronization

/// The in-memory twin of `PostgresCTIDSerials`, on the test's clock: each serial issued once and spent once, by its app.
public final class InMemoryCTIDSerials: CTIDSerialStore {
    public struct Issued: Sendable {
        public var serial: String
        public var appId: UUID
        public var mode: CTIDAuthMode
        public var randNum: String
        public var ttl: Int
        public var expiresAt: Date
    }

    public struct DuplicateSerial: Error { public var serial: String }

    private let state = Mutex<(issued: [Issued], spent: Set<String>)>(([], []))
    private let now: @Sendable () -> Date
    public var issued: [Issued] { state.withLock { $0.issued } }

    public init(now: @escaping @Sendable () -> Date = { Date() }) { self.now = now }

    public func issue(_ serial: String, appId: UUID, authMode: CTIDAuthMode, randNum: String, ttlSeconds: Int) async throws {
        let expiresAt = now().addingTimeInterval(TimeInterval(ttlSeconds))
        try state.withLock { state in
            guard !state.issued.contains(where: { $0.serial == serial }) else { throw DuplicateSerial(serial: serial) }
            state.issued.append(Issued(serial: serial, appId: appId, mode: authMode, randNum: randNum, ttl: ttlSeconds, expiresAt: expiresAt))
        }
    }

    public func spend(_ serial: String, appId: UUID) async throws -> SpentSerial? {
        let now = now()
        return state.withLock { state in
            guard let found = state.issued.first(where: { $0.serial == serial && $0.appId == appId }), state.spent.insert(serial).inserted else {
                return nil
            }
            return SpentSerial(authMode: found.mode.rawValue, randNum: found.randNum, live: found.expiresAt > now)
        }
    }
}

/// The in-memory twin of `PostgresIdentityRegistry`: one app's registry, keyed by the plain number (the PostgreSQL
/// registry keys rows by an HMAC of it).
public final class InMemoryIdentityRegistry: IdentityRegistry {
    public let identities = Mutex<[String: RegisteredIdentity]>([:])

    public init() {}

    public func lookup(appId: UUID, number: String) async throws -> RegisteredIdentity? { identities.withLock { $0[number] } }
    public func register(appId: UUID, number: String, identity: RegisteredIdentity) async throws { identities.withLock { $0[number] = identity } }
    public func attemptKey(appId: UUID, number: String) -> String { "\(appId):\(number)" }
}
