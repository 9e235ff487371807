import Crypto
import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// A device credential as an assertion sees it.
package struct StoredCredential: Sendable {
    package var id: UUID
    package var userId: UUID
    /// SubjectPublicKeyInfo DER of the P-256 key.
    package var publicKey: [UInt8]
    package var counter: Int64
    package var flagged: Bool

    package init(id: UUID, userId: UUID, publicKey: [UInt8], counter: Int64, flagged: Bool) {
        self.id = id
        self.userId = userId
        self.publicKey = publicKey
        self.counter = counter
        self.flagged = flagged
    }
}

/// A device credential as operators list it.
package struct CredentialView: Codable, Sendable {
    package var credentialId: String
    package var userId: String
    package var deviceId: String
    package var policy: String
    package var counter: Int64
    package var hasAttestation: Bool
    package var createdAt: Date
    package var lastUsedAt: Date?
    package var flaggedAt: Date?
    package var revokedAt: Date?

    package init(credentialId: String, userId: String, deviceId: String, policy: String, counter: Int64, hasAttestation: Bool, createdAt: Date, lastUsedAt: Date? = nil, flaggedAt: Date? = nil, revokedAt: Date? = nil) {
        self.credentialId = credentialId
        self.userId = userId
        self.deviceId = deviceId
        self.policy = policy
        self.counter = counter
        self.hasAttestation = hasAttestation
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.flaggedAt = flaggedAt
        self.revokedAt = revokedAt
    }
}

/// What became of an assertion's counter (`DeviceCredentialStore.advanceCounter`).
package enum CounterAdvance: Sendable { case advanced, flagged, revoked }

/// Device credentials (`device_credentials`) and their assertion challenges (`one_time_challenges` of purpose
/// `device-assertion`).
/// A key and policy that passed the checks, ready to store.
package struct NewDeviceCredential: Sendable {
    package var publicKey: P256PublicKey
    package var policy: DeviceCredentialPolicy
    package var attestation: [UInt8]?

    package init(publicKey: String, policy: String, attestation: String?) throws {
        guard let der = Data(base64Encoded: publicKey), let key = try? P256PublicKey(spkiDER: Array(der)) else {
            throw APIError(.invalidRequest, "publicKey must be the base64 SubjectPublicKeyInfo DER of a P-256 key")
        }
        let policy = DeviceCredentialPolicy(rawValue: policy)
        guard DeviceCredentialPolicy.known.contains(policy) else {
            throw APIError(.invalidRequest, "policy must be one of \(DeviceCredentialPolicy.known.map(\.rawValue).joined(separator: ", "))")
        }
        var stored: [UInt8]?
        if let attestation {
            guard let bytes = Data(base64Encoded: attestation), bytes.count <= 16 << 10 else {
                throw APIError(.invalidRequest, "attestation must be base64 of at most 16 KiB")
            }
            stored = Array(bytes)
        }
        self.publicKey = key
        self.policy = policy
        self.attestation = stored
    }
}


package protocol DeviceCredentialStore: Sendable {
    /// Stores the credential as the user's only live one on the device (a new registration revokes the previous, which
    /// is how a flagged or locked credential is recovered); nil when the user is not, or no longer, in the app.
    func register(_ credential: NewDeviceCredential, appId: UUID, user: UUID, device: String) async throws -> UUID?
    /// The live credential registered to this app and device.
    func live(_ id: UUID, appId: UUID, device: String) async throws -> StoredCredential?
    func issueChallenge(_ challenge: String, appId: UUID, credential: UUID, ttlSeconds: Int) async throws
    /// Spends the challenge, once; false when it is unknown, spent, expired or another credential's.
    func spendChallenge(_ challenge: String, appId: UUID, credential: UUID) async throws -> Bool
    /// WebAuthn's rule in one conditional update (concurrent assertions cannot both pass with one counter): the counter
    /// must rise, or stay 0 on a device that does not count; otherwise the credential is flagged.
    func advanceCounter(_ id: UUID, to counter: Int64) async throws -> CounterAdvance
    func list(appId: UUID, user: UUID) async throws -> [CredentialView]
    /// Revokes a live credential (only on `device`, when given): its user and device, nil when there is none.
    func revoke(_ id: UUID, appId: UUID, device: String?) async throws -> (userId: UUID, deviceId: String)?
    /// The user and device of a credential, live or not.
    func owner(of id: UUID, appId: UUID) async throws -> (userId: UUID, deviceId: String)?
}

package struct PostgresDeviceCredentials: DeviceCredentialStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func register(_ credential: NewDeviceCredential, appId: UUID, user: UUID, device: String) async throws -> UUID? {
        let credentialId = UUID()
        // The user's row is not locked here (that would need UPDATE on users): the foreign key takes its lock, so a user
        // deleted meanwhile makes the insert fail, or the deletion takes the new credential with it.
        do {
            return try await database.withTransaction { connection in
                guard try await connection.query("SELECT 1 FROM users WHERE id = \(user) AND app_id = \(appId)").first != nil else { return nil }
                _ = try await connection.query("""
                    UPDATE device_credentials SET revoked_at = now()
                    WHERE app_id = \(appId) AND user_id = \(user) AND device_id = \(device) AND revoked_at IS NULL
                    """)
                _ = try await connection.query("""
                    INSERT INTO device_credentials (id, app_id, user_id, device_id, public_key, policy, attestation)
                    VALUES (\(credentialId), \(appId), \(user), \(device), \(credential.publicKey.spkiDER), \(credential.policy.rawValue),
                            \(credential.attestation))
                    """)
                return credentialId
            }
        } catch let error as PostgresError where error.isForeignKeyViolation {
            return nil
        }
    }

    package func live(_ id: UUID, appId: UUID, device: String) async throws -> StoredCredential? {
        guard let row = try await database.query("""
            SELECT user_id, public_key, counter, flagged_at IS NOT NULL AS flagged FROM device_credentials
            WHERE id = \(id) AND app_id = \(appId) AND device_id = \(device) AND revoked_at IS NULL
            """).first else { return nil }
        return StoredCredential(id: id, userId: try row.decode("user_id"), publicKey: try row.decode("public_key"),
                                counter: try row.decode("counter"), flagged: try row.decode("flagged"))
    }

    package func issueChallenge(_ challenge: String, appId: UUID, credential: UUID, ttlSeconds: Int) async throws {
        _ = try await database.query("""
            INSERT INTO one_time_challenges (id, app_id, purpose, subject, expires_at)
            VALUES (\(challenge), \(appId), 'device-assertion', \(credential.wire), now() + make_interval(secs => \(ttlSeconds)))
            """)
    }

    package func spendChallenge(_ challenge: String, appId: UUID, credential: UUID) async throws -> Bool {
        try await database.query("""
            UPDATE one_time_challenges SET used_at = now()
            WHERE id = \(challenge) AND app_id = \(appId) AND purpose = 'device-assertion' AND subject = \(credential.wire)
              AND used_at IS NULL AND expires_at > now()
            """).affectedRows == 1
    }

    package func advanceCounter(_ id: UUID, to counter: Int64) async throws -> CounterAdvance {
        let advanced = try await database.query("""
            UPDATE device_credentials SET counter = \(counter), last_used_at = now()
            WHERE id = \(id) AND revoked_at IS NULL AND flagged_at IS NULL
              AND ((counter = 0 AND \(counter) = 0) OR counter < \(counter))
            """)
        guard advanced.affectedRows == 0 else { return .advanced }
        let flagged = try await database.query("""
            UPDATE device_credentials SET flagged_at = now() WHERE id = \(id) AND revoked_at IS NULL AND flagged_at IS NULL
            """)
        if flagged.affectedRows == 0,
           try await database.query("SELECT 1 FROM device_credentials WHERE id = \(id) AND revoked_at IS NOT NULL").first != nil {
            return .revoked
        }
        return .flagged
    }

    package func list(appId: UUID, user: UUID) async throws -> [CredentialView] {
        try await database.query("""
            SELECT id, user_id, device_id, policy, counter, attestation IS NOT NULL AS has_attestation, created_at, last_used_at, flagged_at, revoked_at
            FROM device_credentials WHERE app_id = \(appId) AND user_id = \(user) ORDER BY created_at, id LIMIT 1000
            """).map { row in
            CredentialView(credentialId: try row.decode("id", as: UUID.self).wire, userId: try row.decode("user_id", as: UUID.self).wire,
                           deviceId: try row.decode("device_id"), policy: try row.decode("policy"), counter: try row.decode("counter"),
                           hasAttestation: try row.decode("has_attestation"), createdAt: try row.decode("created_at"),
                           lastUsedAt: try row.decode("last_used_at"), flaggedAt: try row.decode("flagged_at"), revokedAt: try row.decode("revoked_at"))
        }
    }

    package func revoke(_ id: UUID, appId: UUID, device: String?) async throws -> (userId: UUID, deviceId: String)? {
        try await database.query("""
            UPDATE device_credentials SET revoked_at = now()
            WHERE id = \(id) AND app_id = \(appId) AND (\(device == nil) OR device_id = \(device)) AND revoked_at IS NULL
            RETURNING user_id, device_id
            """).first.map { (userId: try $0.decode("user_id"), deviceId: try $0.decode("device_id")) }
    }

    package func owner(of id: UUID, appId: UUID) async throws -> (userId: UUID, deviceId: String)? {
        try await database.query("SELECT user_id, device_id FROM device_credentials WHERE id = \(id) AND app_id = \(appId)")
            .first.map { (userId: try $0.decode("user_id"), deviceId: try $0.decode("device_id")) }
    }
}
