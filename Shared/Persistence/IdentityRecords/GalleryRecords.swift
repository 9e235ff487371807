import AppRecords
import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// A stored template as a matcher's gallery loads it: still sealed, its model as stored.
package struct StoredTemplate: Sendable {
    package var id: UUID
    package var appId: UUID
    package var userId: UUID
    package var modelId: String
    package var sealedEmbedding: [UInt8]
}

/// The part of a sharded gallery one matcher holds: the templates whose `shardIndex` over `count` shards is `index`.
package struct TemplateSlice: Sendable {
    package var index: Int
    package var count: Int

    package init(index: Int, count: Int) {
        precondition(count > 0 && (0..<count).contains(index), "a slice of a gallery in count > 0 shards")
        (self.index, self.count) = (index, count)
    }

    package static let whole = TemplateSlice(index: 0, count: 1)
}

/// The matcher's reads of the galleries (`face_templates`, `gallery_tombstones`) and of each app's face model. They
/// read across apps: a matcher serves every app.
package struct GalleryRecords: Sendable {
    package let database: PostgresPool

    package init(database: PostgresPool) { self.database = database }

    /// Every template, or (`since`) those whose change sequence is above it or that were stored in the last five minutes:
    /// sequence numbers can commit out of order, so recent rows are read again. With `shard`, only that slice of a sharded
    /// gallery (`shardIndex`), and any row stored without its hash, for the caller to place.
    package func forEachTemplate(since: Int64? = nil, shard: TemplateSlice = .whole,
                                 _ body: (StoredTemplate, _ changeSeq: Int64) throws -> Void) async throws {
        try await Tenant.acrossApps {
            try await database.forEachRow(Self.templates(since: since, shard: shard)) { row in try body(try Self.template(row), try row.decode("change_seq")) }
        }
    }

    /// The templates deleted since `since` (or in the last five minutes), with their change sequence.
    package func forEachTombstone(since: Int64, _ body: (_ templateId: UUID, _ changeSeq: Int64) throws -> Void) async throws {
        try await Tenant.acrossApps {
            try await database.forEachRow(Self.tombstones(since: since)) { row in try body(try row.decode("template_id"), try row.decode("change_seq")) }
        }
    }

    /// The statements of `forEachTemplate` and `forEachTombstone`: with `since`, read by index (change_seq, created_at,
    /// deleted_at), never by a scan of the whole gallery.
    package static func templates(since: Int64?, shard: TemplateSlice = .whole) -> PostgresQuery {
        var query: PostgresQuery = "SELECT id, app_id, user_id, model_id, embedding_sealed, change_seq FROM face_templates WHERE "
        if let since {
            query.append("(change_seq > \(since) OR created_at > now() - interval '5 minutes')")
        } else {
            query.append("true")
        }
        if shard.count > 1 {
            // The hash is unsigned and stored as its signed bit pattern: under a negative one, 2^64 modulo the count is added back.
            let count = Int64(shard.count), wrap = Int64((UInt64.max % UInt64(shard.count) + 1) % UInt64(shard.count))
            query.append("""
                 AND (shard_hash IS NULL OR (shard_hash % \(count) + \(count) + CASE WHEN shard_hash < 0 THEN \(wrap) ELSE 0 END) % \(count) = \(Int64(shard.index)))
                """)
        }
        return query
    }

    package static func tombstones(since: Int64) -> PostgresQuery {
        "SELECT template_id, change_seq FROM gallery_tombstones WHERE change_seq > \(since) OR deleted_at > now() - interval '5 minutes'"
    }

    /// One template; nil when it is gone (or was never stored).
    package func template(_ id: UUID) async throws -> StoredTemplate? {
        try await Tenant.acrossApps {
            try await database.query("SELECT id, app_id, user_id, model_id, embedding_sealed FROM face_templates WHERE id = \(id)").first.map(Self.template)
        }
    }

    /// The apps that exist.
    package func appIds() async throws -> Set<UUID> {
        Set(try await database.query("SELECT id FROM apps").map { try $0.decode("id", as: UUID.self) })
    }

    /// The app's face model as stored; nil when the app is gone.
    package func faceModel(of appId: UUID) async throws -> String? {
        try await database.query("SELECT face_model FROM apps WHERE id = \(appId)").first?.decode("face_model", as: String.self)
    }

    private static func template(_ row: PostgresRow) throws -> StoredTemplate {
        StoredTemplate(id: try row.decode("id"), appId: try row.decode("app_id"), userId: try row.decode("user_id"),
                       modelId: try row.decode("model_id"), sealedEmbedding: try row.decode("embedding_sealed"))
    }
}
