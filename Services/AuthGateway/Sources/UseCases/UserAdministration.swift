import FaceGateCore
import IdentityRecords
import Foundation

/// Tells every matcher about a template change. Best effort: a matcher that misses it catches up at its next
/// reconciliation with PostgreSQL.
protocol GalleryBroadcast: Sendable {
    func broadcast(_ change: GalleryChange) async
}

/// An operator's work on an app's people (`/v1/apps/{appId}/users…`, device and binding resets), without HTTP: creating
/// and listing users, erasing users and templates (every erased template is broadcast so every matcher drops it) and
/// clearing locks.
struct UserAdministration: Sendable {
    let roster: any UserRoster
    let attempts: AttemptGuard
    let gallery: any GalleryBroadcast

    struct Created: Codable, Sendable, Equatable {
        var userId: String
        var employeeNumber: String
        var name: String
    }

    struct Page: Codable, Sendable {
        var items: [UserView]
        /// Opaque (`PageCursor`); absent on the last page.
        var nextCursor: String?
    }

    /// Trimmed, 1–64 and 1–200 characters; `CONFLICT` when the employee number is taken in the app.
    func create(app: UUID, employeeNumber: String, name: String, draft: inout TransactionDraft) async throws -> Created {
        let number = employeeNumber.trimmingCharacters(in: .whitespaces)
        let name = name.trimmingCharacters(in: .whitespaces)
        guard (1...64).contains(number.count), (1...200).contains(name.count) else {
            throw APIError(.invalidRequest, "employeeNumber must be 1–64 and name 1–200 characters")
        }
        let userId = UUID()
        guard try await roster.create(userId, appId: app, employeeNumber: number, name: name) else {
            throw APIError(.conflict, "employee number \(number) already exists in this app")
        }
        draft.userId = userId
        return Created(userId: userId.wire, employeeNumber: number, name: name)
    }

    func user(_ user: UUID, app: UUID) async throws -> UserView {
        guard let found = try await roster.user(user, appId: app) else { throw APIError(.notFound, "no such user in this app") }
        return found
    }

    /// Oldest first; `limit` is held to 1…500 (50 when absent).
    func page(app: UUID, limit: Int?, cursor: String?) async throws -> Page {
        let limit = min(max(limit ?? 50, 1), 500)
        let rows = try await roster.page(appId: app, after: try PageCursor.decode(cursor), limit: limit + 1)
        let (items, next) = PageCursor.page(rows, limit: limit) { PageCursor(time: $0.createdAt, id: UUID(uuidString: $0.userId)!) }
        return Page(items: items, nextCursor: next)
    }

    /// Erases the user with their templates (each broadcast) and devices.
    func erase(_ user: UUID, app: UUID, draft: inout TransactionDraft) async throws {
        draft.userId = user
        guard let removed = try await roster.erase(user, appId: app) else { throw APIError(.notFound, "no such user in this app") }
        for change in removed { await gallery.broadcast(change) }
        draft.detail = ["templatesErased": String(removed.count)]
    }

    /// The user's templates with the quality measured at enrollment (never the embedding).
    func faces(of user: UUID, app: UUID) async throws -> [FaceView] {
        _ = try await self.user(user, app: app)
        return try await roster.faces(of: user, appId: app)
    }

    /// Erases one template and broadcasts it, like a user's erasure.
    func eraseFace(_ template: UUID, of user: UUID, app: UUID, draft: inout TransactionDraft) async throws {
        draft.userId = user
        draft.detail = ["templateId": template.wire]
        guard let change = try await roster.eraseFace(template, of: user, appId: app) else {
            throw APIError(.notFound, "no such face template of this user")
        }
        await gallery.broadcast(change)
    }

    /// Clears a device's failed face-login count (throttle and lock).
    func resetDevice(_ device: String, app: UUID) async throws {
        try await attempts.reset(appId: app, .device(device))
    }

    /// Clears the lock on binding new devices to a user, set after repeated wrong employee numbers.
    func resetBinding(of user: UUID, app: UUID, draft: inout TransactionDraft) async throws {
        draft.userId = user
        try await attempts.reset(appId: app, .bindingUser(user))
    }
}
