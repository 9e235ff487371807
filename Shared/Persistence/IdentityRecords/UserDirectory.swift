import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// A user as logins, bindings and exchanges name them.
package struct UserProfile: Sendable, Equatable {
    package var employeeNumber: String
    package var name: String

    package init(employeeNumber: String, name: String) {
        self.employeeNumber = employeeNumber
        self.name = name
    }
}

/// The reads of `users` (and whether a user holds a face template) that logins, bindings, device credentials and
/// identity exchanges make; the operator API and the kiosk-orchestrator write the table.
package protocol UserDirectory: Sendable {
    /// The user with this employee number in the app.
    func user(appId: UUID, employeeNumber: String) async throws -> UUID?
    /// The user's profile, nil when the user is not (or no longer) in the app.
    func profile(of user: UUID, appId: UUID) async throws -> UserProfile?
    /// Whether the user holds a face template of any model.
    func hasFace(_ user: UUID, appId: UUID) async throws -> Bool
    /// The employee numbers of those of `users` still in the app.
    func employeeNumbers(of users: [UUID], appId: UUID) async throws -> [UUID: String]
}

extension UserDirectory {
    package func exists(_ user: UUID, appId: UUID) async throws -> Bool { try await profile(of: user, appId: appId) != nil }
}

package struct PostgresUserDirectory: UserDirectory {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func user(appId: UUID, employeeNumber: String) async throws -> UUID? {
        try await database.query("SELECT id FROM users WHERE app_id = \(appId) AND employee_number = \(employeeNumber)").first?.decode("id")
    }

    package func profile(of user: UUID, appId: UUID) async throws -> UserProfile? {
        try await database.query("SELECT employee_number, name FROM users WHERE id = \(user) AND app_id = \(appId)").first.map {
            UserProfile(employeeNumber: try $0.decode("employee_number"), name: try $0.decode("name"))
        }
    }

    package func hasFace(_ user: UUID, appId: UUID) async throws -> Bool {
        try await database.query("SELECT 1 FROM face_templates WHERE app_id = \(appId) AND user_id = \(user) LIMIT 1").first != nil
    }

    package func employeeNumbers(of users: [UUID], appId: UUID) async throws -> [UUID: String] {
        guard !users.isEmpty else { return [:] }
        let rows = try await database.query("""
            SELECT id, employee_number FROM users WHERE app_id = \(appId) AND id = ANY(\(users.arrayLiteral)::uuid[])
            """)
        return Dictionary(uniqueKeysWithValues: try rows.rows.map { (try $0.decode("id", as: UUID.self), try $0.decode("employee_number", as: String.self)) })
    }
}
