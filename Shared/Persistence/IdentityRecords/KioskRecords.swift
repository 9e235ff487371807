import AppRecords
import FaceGateCore
import Foundation
import KioskSessionRecords
import PostgresClient

/// An app's rules for its kiosk (`apps`, which the orchestrator may only read).
package struct KioskRules: Sendable {
    /// The app's identification threshold.
    package var threshold: Float?
    package var approval: KioskApprovalPolicy

    package init(threshold: Float? = nil, approval: KioskApprovalPolicy) {
        self.threshold = threshold
        self.approval = approval
    }
}

/// The orchestrator's reads of apps and users, and the customers it approves (`users` of source `kiosk`, whose
/// templates the matcher's enrollment writes). Sessions are `KioskSessionStore`'s.
package protocol KioskRecords: Sendable {
    /// The app's rules; the defaults (no threshold, no approval rules) for an app that is gone.
    func rules(of appId: UUID) async throws -> KioskRules
    /// The name of a user of the app the request is scoped to.
    func name(of user: UUID) async throws -> String?
    /// Creates the customer unless it exists; false when it does not exist afterwards (another customer of the app holds
    /// the number).
    func addCustomer(_ id: UUID, appId: UUID, number: String, name: String) async throws -> Bool
    /// The user holds a face template.
    func isEnrolled(_ user: UUID) async throws -> Bool
    /// Removes a customer the kiosk created (never an operator's user).
    func removeCustomer(_ id: UUID) async throws
}

package struct PostgresKioskRecords: KioskRecords {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func rules(of appId: UUID) async throws -> KioskRules {
        guard let row = try await database.query("""
            SELECT match_threshold, kiosk_approval::text AS approval FROM apps WHERE id = \(appId)
            """).first else { return KioskRules(threshold: nil, approval: KioskApprovalPolicy()) }
        return KioskRules(threshold: try row.decode("match_threshold"),
                          approval: try FaceGateJSON.decode(KioskApprovalPolicy.self, from: Array(try row.decode("approval", as: String.self).utf8)))
    }

    package func name(of user: UUID) async throws -> String? {
        try await database.query("SELECT name FROM users WHERE id = \(user)").first?.decode("name", as: String.self)
    }

    package func addCustomer(_ id: UUID, appId: UUID, number: String, name: String) async throws -> Bool {
        _ = try await database.query("""
            INSERT INTO users (id, app_id, employee_number, name, source) VALUES (\(id), \(appId), \(number), \(name), 'kiosk')
            ON CONFLICT DO NOTHING
            """)
        return try await database.query("SELECT 1 FROM users WHERE id = \(id)").first != nil
    }

    package func isEnrolled(_ user: UUID) async throws -> Bool {
        try await database.query("SELECT 1 FROM face_templates WHERE user_id = \(user) LIMIT 1").first != nil
    }

    package func removeCustomer(_ id: UUID) async throws {
        _ = try await database.query("DELETE FROM users WHERE id = \(id) AND source = 'kiosk'")
    }
}
