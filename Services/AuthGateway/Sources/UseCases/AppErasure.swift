import AppRecords
import FaceGateCore
import Foundation

/// Deleting an app (`DELETE /v1/apps/{appId}`), without HTTP: the app and every row of its data go in one transaction, each
/// of its templates is broadcast so every matcher drops it (a matcher that misses a broadcast drops the app's gallery at its
/// next reconciliation, when it finds the app gone), and operator keys stop naming it. The audit trail and its chain stay,
/// readable by the auditors that covered the app.
struct AppErasure: Sendable {
    let apps: any AppStore
    let keys: any ApiKeyStore
    let gallery: any GalleryBroadcast

    func erase(_ app: AppRecord, draft: inout TransactionDraft) async throws {
        guard let removed = try await apps.delete(app.id) else { throw APIError(.notFound, "no such app") }
        try await keys.forget(app: app.id)
        for change in removed.templates { await gallery.broadcast(change) }
        draft.detail = ["name": app.name, "usersErased": String(removed.users), "templatesErased": String(removed.templates.count)]
    }
}
