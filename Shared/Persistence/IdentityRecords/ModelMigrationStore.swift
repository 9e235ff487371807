import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// A user not yet ready for the model an app moves to.
package struct PendingUser: Sendable {
    package var id: UUID
    package var employeeNumber: String
    /// The user has a kept enrollment photo to re-embed.
    package var keptPhoto: Bool

    package init(id: UUID, employeeNumber: String, keptPhoto: Bool) {
        self.id = id
        self.employeeNumber = employeeNumber
        self.keptPhoto = keptPhoto
    }
}

/// The reads of a face-model migration: which users hold templates of which model (`users`, `face_templates`) and which
/// have a kept enrollment photo (`enrollment_photos`, whose photo column this service may not even read).
package protocol ModelMigrationStore: Sendable {
    /// Of the users holding a template of `from`: how many, how many also hold one of `to`, and how many of the others
    /// have a kept photo.
    func counts(appId: UUID, from: FaceModel, to: FaceModel) async throws -> (users: Int, ready: Int, keptPhotos: Int)
    /// Up to `limit` users holding `from` but not `to`, oldest first.
    func pending(appId: UUID, from: FaceModel, to: FaceModel, limit: Int) async throws -> [PendingUser]
    /// Up to `limit` kept photos, by their template's id after `after`, of `from` templates of users not holding `to`.
    func keptPhotos(appId: UUID, from: FaceModel, to: FaceModel, after: UUID, limit: Int) async throws -> [UUID]
    func holds(_ user: UUID, appId: UUID, model: FaceModel) async throws -> Bool
}

package struct PostgresModelMigration: ModelMigrationStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    /// SQL: the user row `alias` holds a template of `model` (a program-chosen model name, never input).
    private static func holds(_ alias: String, _ model: FaceModel) -> String {
        "EXISTS (SELECT 1 FROM face_templates t WHERE t.user_id = \(alias).id AND t.model_id = '\(model.rawValue)')"
    }

    /// SQL: the user row `alias` has a kept enrollment photo.
    private static func keptPhoto(_ alias: String) -> String {
        "EXISTS (SELECT 1 FROM enrollment_photos p WHERE p.user_id = \(alias).id)"
    }

    package func counts(appId: UUID, from: FaceModel, to: FaceModel) async throws -> (users: Int, ready: Int, keptPhotos: Int) {
        let row = try await database.query("""
            SELECT count(*)::int AS users,
                   count(*) FILTER (WHERE \(unsafeRaw: Self.holds("u", to)))::int AS ready,
                   count(*) FILTER (WHERE NOT \(unsafeRaw: Self.holds("u", to)) AND \(unsafeRaw: Self.keptPhoto("u")))::int AS kept
            FROM users u
            WHERE u.app_id = \(appId) AND \(unsafeRaw: Self.holds("u", from))
            """).first
        guard let row else { return (0, 0, 0) }
        return (try row.decode("users", as: Int.self), try row.decode("ready", as: Int.self), try row.decode("kept", as: Int.self))
    }

    package func pending(appId: UUID, from: FaceModel, to: FaceModel, limit: Int) async throws -> [PendingUser] {
        try await database.query("""
            SELECT u.id, u.employee_number, \(unsafeRaw: Self.keptPhoto("u")) AS kept FROM users u
            WHERE u.app_id = \(appId) AND \(unsafeRaw: Self.holds("u", from)) AND NOT \(unsafeRaw: Self.holds("u", to))
            ORDER BY u.created_at, u.id LIMIT \(limit)
            """).map { PendingUser(id: try $0.decode("id"), employeeNumber: try $0.decode("employee_number"), keptPhoto: try $0.decode("kept")) }
    }

    package func keptPhotos(appId: UUID, from: FaceModel, to: FaceModel, after: UUID, limit: Int) async throws -> [UUID] {
        try await database.query("""
            SELECT p.template_id FROM enrollment_photos p JOIN users u ON u.id = p.user_id
            WHERE p.app_id = \(appId) AND p.template_id > \(after) AND NOT \(unsafeRaw: Self.holds("u", to))
              AND EXISTS (SELECT 1 FROM face_templates s WHERE s.id = p.template_id AND s.model_id = \(from.rawValue))
            ORDER BY p.template_id LIMIT \(limit)
            """).map { try $0.decode("template_id") }
    }

    package func holds(_ user: UUID, appId: UUID, model: FaceModel) async throws -> Bool {
        try await database.query("""
            SELECT 1 FROM face_templates WHERE app_id = \(appId) AND user_id = \(user) AND model_id = \(model.rawValue) LIMIT 1
            """).first != nil
    }
}
