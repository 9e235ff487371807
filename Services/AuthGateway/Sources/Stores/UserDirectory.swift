import FaceGateCore
import Foundation
import PostgresClient

/// The lookups of `users` that logins and bindings make (the operator API writes the table).
protocol UserDirectory: Sendable {
    /// The user with this employee number in the app.
    func user(appId: UUID, employeeNumber: String) async throws -> UUID?
    func exists(_ user: UUID, appId: UUID) async throws -> Bool
    /// The user's name, nil when the user is not (or no longer) in the app.
    func name(of user: UUID, appId: UUID) async throws -> String?
}

struct PostgresUserDirectory: UserDirectory {
    let database: PostgresPool

    func user(appId: UUID, employeeNumber: String) async throws -> UUID? {
        try await database.query("SELECT id FROM users WHERE app_id = \(appId) AND employee_number = \(employeeNumber)").first?.decode("id")
    }

    func exists(_ user: UUID, appId: UUID) async throws -> Bool {
        try await name(of: user, appId: appId) != nil
    }

    func name(of user: UUID, appId: UUID) async throws -> String? {
        try await database.query("SELECT name FROM users WHERE id = \(user) AND app_id = \(appId)").first?.decode("name")
    }
}
