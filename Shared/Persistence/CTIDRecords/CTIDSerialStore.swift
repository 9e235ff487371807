import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// A CTID serial as its spending found it.
public struct SpentSerial: Sendable, Equatable {
    /// The auth mode's code as issued (`CTIDAuthMode`'s raw value, or a code this version does not know).
    public var authMode: Int
    public var randNum: String
    /// It had not expired.
    public var live: Bool

    public init(authMode: Int, randNum: String, live: Bool) {
        self.authMode = authMode
        self.randNum = randNum
        self.live = live
    }
}

/// CTID serial numbers (`ctid_serials`): the auth-gateway issues them, the ctid-verifier spends each once with the
/// envelope that names it (the gateway's retention sweep deletes them after they expire).
public protocol CTIDSerialStore: Sendable {
    func issue(_ serial: String, appId: UUID, authMode: CTIDAuthMode, randNum: String, ttlSeconds: Int) async throws
    /// Spends the app's serial: of any number of concurrent calls only one gets it. Nil when it is unknown, another
    /// app's or spent already; an expired one is spent too and answers `live` false.
    func spend(_ serial: String, appId: UUID) async throws -> SpentSerial?
}

public struct PostgresCTIDSerials: CTIDSerialStore {
    let database: PostgresPool

    public init(database: PostgresPool) { self.database = database }

    public func issue(_ serial: String, appId: UUID, authMode: CTIDAuthMode, randNum: String, ttlSeconds: Int) async throws {
        _ = try await database.query("""
            INSERT INTO ctid_serials (serial, app_id, auth_mode, rand_num, expires_at)
            VALUES (\(serial), \(appId), \(authMode.rawValue), \(randNum), now() + make_interval(secs => \(ttlSeconds)))
            """)
    }

    public func spend(_ serial: String, appId: UUID) async throws -> SpentSerial? {
        guard let row = try await database.query("""
            UPDATE ctid_serials SET used_at = now()
            WHERE serial = \(serial) AND app_id = \(appId) AND used_at IS NULL
            RETURNING auth_mode, rand_num, expires_at > now() AS live
            """).first else { return nil }
        return SpentSerial(authMode: try row.decode("auth_mode"), randNum: try row.decode("rand_num"), live: try row.decode("live"))
    }

    /// Deletes every app's serials an hour after they expired, spent or not (the gateway's retention sweep).
    public func sweepExpired() async throws {
        try await Tenant.acrossApps {
            _ = try await database.query("DELETE FROM ctid_serials WHERE expires_at < now() - interval '1 hour'")
        }
    }
}
