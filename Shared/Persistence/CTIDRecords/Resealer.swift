import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// Moves what is sealed at rest under a previous sealing key to the current one (`facegate reseal`), a batch at a
/// time, while the services run: face templates, kept enrollment photos, and the CTID registry's names and portrait templates. A row is
/// rewritten only if it still holds the value that was read, so a concurrent change is never overwritten. Kiosk
/// sessions are left alone: they end within their TTL, and the services open their sealed values with the previous
/// keys meanwhile.
///
/// Rotation: give every service the new `FACEGATE_SEALING_KEY` with the old one in `FACEGATE_PREVIOUS_SEALING_KEYS`,
/// run this, then drop the old key.
public struct Resealer: Sendable {
    public struct Counts: Sendable, Equatable {
        public var checked = 0
        public var resealed = 0

        public init(checked: Int = 0, resealed: Int = 0) {
            self.checked = checked
            self.resealed = resealed
        }
    }

    let database: PostgresPool
    let sealer: Sealer
    let batchSize: Int

    public init(database: PostgresPool, sealer: Sealer, batchSize: Int = 500) {
        self.database = database
        self.sealer = sealer
        self.batchSize = batchSize
    }

    /// Every table's counts, by table name. Throws on a value no key opens (named by its row), leaving the rest as is.
    public func run() async throws -> [String: Counts] {
        try await Tenant.acrossApps {
            ["face_templates": try await resealByKey("face_templates", key: "id", column: "embedding_sealed", context: Sealer.templateContext),
             "enrollment_photos": try await resealByKey("enrollment_photos", key: "template_id", column: "photo_sealed",
                                                        context: Sealer.enrollmentPhotoContext),
             "ctid_registry": try await registry()]
        }
    }

    /// A table whose sealed column is bound to the row's uuid key.
    private func resealByKey(_ table: String, key: String, column: String, context: (UUID) -> String) async throws -> Counts {
        var counts = Counts()
        var after = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        while true {
            let rows = try await database.query("""
                SELECT \(unsafeRaw: key) AS id, \(unsafeRaw: column) AS sealed FROM \(unsafeRaw: table)
                WHERE \(unsafeRaw: key) > \(after) ORDER BY \(unsafeRaw: key) LIMIT \(batchSize)
                """)
            for row in rows.rows {
                let id: UUID = try row.decode("id")
                let sealed: [UInt8] = try row.decode("sealed")
                counts.checked += 1
                guard let fresh = try reseal(sealed, contexts: [context(id)], row: "\(table) \(id.wire)") else { continue }
                counts.resealed += try await database.query("""
                    UPDATE \(unsafeRaw: table) SET \(unsafeRaw: column) = \(fresh) WHERE \(unsafeRaw: key) = \(id) AND \(unsafeRaw: column) = \(sealed)
                    """).affectedRows
            }
            guard rows.rows.count == batchSize, let last = rows.rows.last else { return counts }
            after = try last.decode("id")
        }
    }

    private func registry() async throws -> Counts {
        var counts = Counts()
        var after: (UUID, [UInt8]) = (UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, [])
        let templateContexts = FaceModel.allCases.map { Sealer.templateContext($0.referenceTemplateKey) }
        while true {
            let rows = try await database.query("""
                SELECT app_id, number_hash, name_sealed, template_sealed FROM ctid_registry
                WHERE (app_id, number_hash) > (\(after.0), \(after.1)) ORDER BY app_id, number_hash LIMIT \(batchSize)
                """)
            for row in rows.rows {
                let (appId, hash): (UUID, [UInt8]) = (try row.decode("app_id"), try row.decode("number_hash"))
                let name: [UInt8] = try row.decode("name_sealed")
                let template: [UInt8]? = try row.decode("template_sealed")
                let label = "ctid_registry \(appId.wire)"
                counts.checked += 1
                let freshName = try reseal(name, contexts: [Sealer.registryNameContext(appId: appId, numberHash: hash)], row: label)
                let freshTemplate = try template.flatMap { try reseal($0, contexts: templateContexts, row: label) }
                guard freshName != nil || freshTemplate != nil else { continue }
                counts.resealed += try await database.query("""
                    UPDATE ctid_registry SET name_sealed = \(freshName ?? name), template_sealed = \(freshTemplate ?? template)
                    WHERE app_id = \(appId) AND number_hash = \(hash) AND name_sealed = \(name)
                      AND template_sealed IS NOT DISTINCT FROM \(template)
                    """).affectedRows
            }
            guard rows.rows.count == batchSize, let last = rows.rows.last else { return counts }
            after = (try last.decode("app_id"), try last.decode("number_hash"))
        }
    }

    /// The value under the current key (nil when it already is), trying each context the value may be bound to.
    private func reseal(_ sealed: [UInt8], contexts: [String], row: String) throws -> [UInt8]? {
        for context in contexts {
            do {
                return try sealer.resealed(sealed, context: context)
            } catch {
                continue  // bound to another context, or no key opens it
            }
        }
        throw ResealError(row: row)
    }
}

public struct ResealError: Error, CustomStringConvertible {
    public var row: String
    public var description: String { "\(row): no sealing key opens it (is its key missing from FACEGATE_PREVIOUS_SEALING_KEYS?)" }
}
