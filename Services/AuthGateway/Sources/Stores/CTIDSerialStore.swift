import FaceGateCore
import Foundation
import PostgresClient

/// CTID serial numbers (`ctid_serials`): issued here, spent by the ctid-verifier with the envelope that names them.
protocol CTIDSerialStore: Sendable {
    func issue(_ serial: String, appId: UUID, authMode: CTIDAuthMode, randNum: String, ttlSeconds: Int) async throws
}

struct PostgresCTIDSerials: CTIDSerialStore {
    let database: PostgresPool

    func issue(_ serial: String, appId: UUID, authMode: CTIDAuthMode, randNum: String, ttlSeconds: Int) async throws {
        _ = try await database.query("""
            INSERT INTO ctid_serials (serial, app_id, auth_mode, rand_num, expires_at)
            VALUES (\(serial), \(appId), \(authMode.rawValue), \(randNum), now() + make_interval(secs => \(ttlSeconds)))
            """)
    }
}
