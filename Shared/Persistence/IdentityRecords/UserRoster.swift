import AppRecords
import FaceGateCore
import Foundation
import KioskSessionRecords
import PostgresClient

/// A user as operators see it.
package struct UserView: Codable, Sendable {
    package var userId: String
    package var employeeNumber: String
    package var name: String
    package var faces: Int
    package var createdAt: Date

    package init(userId: String, employeeNumber: String, name: String, faces: Int, createdAt: Date) {
        self.userId = userId
        self.employeeNumber = employeeNumber
        self.name = name
        self.faces = faces
        self.createdAt = createdAt
    }
}

/// A template as operators see it: the quality measured at enrollment, never the embedding.
package struct FaceView: Codable, Sendable {
    package var templateId: String
    package var model: String
    package var quality: FaceQualityReport
    package var createdAt: Date

    package init(templateId: String, model: String, quality: FaceQualityReport, createdAt: Date) {
        self.templateId = templateId
        self.model = model
        self.quality = quality
        self.createdAt = createdAt
    }
}

/// The operator's side of `users` and `face_templates`: creating and listing users, and erasing users and templates.
/// An erasure leaves a tombstone per template (`gallery_tombstones`) in the same transaction, the change every matcher
/// must apply; the caller broadcasts it.
package protocol UserRoster: Sendable {
    /// false when the employee number is taken in the app.
    func create(_ id: UUID, appId: UUID, employeeNumber: String, name: String) async throws -> Bool
    func user(_ id: UUID, appId: UUID) async throws -> UserView?
    /// Up to `limit` users after `after` (creation time and id), oldest first.
    func page(appId: UUID, after: PageCursor?, limit: Int) async throws -> [UserView]
    /// Erases the user with their templates, devices and the kiosk sessions that onboarded them (which hold document
    /// data); nil when there is no such user.
    func erase(_ user: UUID, appId: UUID) async throws -> [GalleryChange]?
    /// How many users of the app hold at least one template.
    func enrolledUsers(appId: UUID) async throws -> Int
    /// The app's templates of `model`: what a search compares a probe with.
    func templateCount(appId: UUID, model: FaceModel) async throws -> Int
    func faces(of user: UUID, appId: UUID) async throws -> [FaceView]
    /// Erases one of the user's templates; nil when the user holds no such template.
    func eraseFace(_ template: UUID, of user: UUID, appId: UUID) async throws -> GalleryChange?
}

package struct PostgresUserRoster: UserRoster {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func create(_ id: UUID, appId: UUID, employeeNumber: String, name: String) async throws -> Bool {
        // The query throws only PostgresError (typed throws); matching it with `catch … as … where` crashes Swift 6.3.1's compiler.
        do {
            _ = try await database.query("INSERT INTO users (id, app_id, employee_number, name) VALUES (\(id), \(appId), \(employeeNumber), \(name))")
            return true
        } catch {
            guard error.isUniqueViolation else { throw error }
            return false
        }
    }

    package func user(_ id: UUID, appId: UUID) async throws -> UserView? {
        try await database.query("""
            SELECT u.id, u.employee_number, u.name, u.created_at, (SELECT count(*) FROM face_templates t WHERE t.user_id = u.id) AS faces
            FROM users u WHERE u.id = \(id) AND u.app_id = \(appId)
            """).first.map { try Self.userView($0) }
    }

    package func page(appId: UUID, after: PageCursor?, limit: Int) async throws -> [UserView] {
        try await database.query("""
            SELECT u.id, u.employee_number, u.name, u.created_at, (SELECT count(*) FROM face_templates t WHERE t.user_id = u.id) AS faces
            FROM users u
            WHERE u.app_id = \(appId) AND (\(after == nil) OR (u.created_at, u.id) > (\(after?.time ?? Date.distantPast), \(after?.id ?? UUID())))
            ORDER BY u.created_at, u.id LIMIT \(limit)
            """).map { try Self.userView($0) }
    }

    private static func userView(_ row: PostgresRow) throws -> UserView {
        UserView(userId: try row.decode("id", as: UUID.self).wire, employeeNumber: try row.decode("employee_number"), name: try row.decode("name"),
                 faces: try row.decode("faces", as: Int.self), createdAt: try row.decode("created_at"))
    }

    package func erase(_ user: UUID, appId: UUID) async throws -> [GalleryChange]? {
        try await database.withTransaction { connection in
            let tombstones = try await connection.query("""
                INSERT INTO gallery_tombstones (template_id, app_id, user_id)
                SELECT id, app_id, user_id FROM face_templates WHERE user_id = \(user) AND app_id = \(appId)
                RETURNING template_id, change_seq
                """)
            let deleted = try await connection.query("DELETE FROM users WHERE id = \(user) AND app_id = \(appId)")
            try await KioskSessionStore.eraseSessions(ofCustomer: user, appId: appId, in: connection)
            guard deleted.affectedRows == 1 else { return nil }
            return try tombstones.rows.map {
                GalleryChange(operation: .delete, appId: appId, userId: user, templateId: try $0.decode("template_id"), changeSeq: try $0.decode("change_seq"))
            }
        }
    }

    package func enrolledUsers(appId: UUID) async throws -> Int {
        try await database.query("SELECT count(DISTINCT user_id) AS n FROM face_templates WHERE app_id = \(appId)").first?.decode("n") ?? 0
    }

    package func templateCount(appId: UUID, model: FaceModel) async throws -> Int {
        try await database.query("SELECT count(*) AS n FROM face_templates WHERE app_id = \(appId) AND model_id = \(model.rawValue)").first?.decode("n") ?? 0
    }

    package func faces(of user: UUID, appId: UUID) async throws -> [FaceView] {
        try await database.query("""
            SELECT id, model_id, quality::text AS quality, created_at FROM face_templates
            WHERE user_id = \(user) AND app_id = \(appId) ORDER BY created_at, id
            """).map { row in
            FaceView(templateId: try row.decode("id", as: UUID.self).wire, model: try row.decode("model_id"),
                     quality: try FaceGateJSON.decode(FaceQualityReport.self, from: Array(try row.decode("quality", as: String.self).utf8)),
                     createdAt: try row.decode("created_at"))
        }
    }

    package func eraseFace(_ template: UUID, of user: UUID, appId: UUID) async throws -> GalleryChange? {
        try await database.withTransaction { connection in
            guard let row = try await connection.query("""
                INSERT INTO gallery_tombstones (template_id, app_id, user_id)
                SELECT id, app_id, user_id FROM face_templates WHERE id = \(template) AND user_id = \(user) AND app_id = \(appId)
                RETURNING change_seq
                """).first else { return nil }
            _ = try await connection.query("DELETE FROM face_templates WHERE id = \(template)")
            return GalleryChange(operation: .delete, appId: appId, userId: user, templateId: template, changeSeq: try row.decode("change_seq"))
        }
    }
}
