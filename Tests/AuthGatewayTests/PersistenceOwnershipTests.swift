import Foundation
import Testing

/// Who owns which table, read from the sources and the schema: SQL is written in the persistence modules
/// (`Shared/Persistence/`) only, each module writes the tables it owns and no other, every table of the schema has one
/// owner, and a service's database role may write an owned table only when the service links its owner.
@Suite struct PersistenceOwnershipTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each persistence module and the tables it owns.
    static let owners: [String: Set<String>] = [
        "AppRecords": ["apps", "api_keys", "usage_counters", "kiosks", "used_token_ids", "idempotent_requests"],
        "IdentityRecords": ["users", "face_templates", "gallery_tombstones", "enrollment_photos", "devices", "device_credentials",
                            "login_confirmations", "one_time_challenges", "used_liveness_frames", "attempt_counters"],
        "AuditRecords": ["transactions", "transaction_chain_heads"],
        "KioskSessionRecords": ["kiosk_sessions", "kiosk_events"],
        "CTIDRecords": ["ctid_serials", "ctid_registry"],
        "PlatformRecords": ["reply_partition_leases", "processed_messages"],
    ]
    /// The persistence module holding the schema's migrations, which creates every table and writes none.
    static let ledger = "FaceGateSchema"
    /// Each service's database role and the library target that runs as it.
    static let roles = ["facegate_gateway": "AuthGateway", "facegate_matcher": "MatcherWorker",
                        "facegate_ctid": "CTIDVerifier", "facegate_kiosk": "KioskOrchestrator"]

    static func read(_ path: String) throws -> String { try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) }

    /// The Swift files under `folder`, relative to the root.
    static func swiftFiles(under folder: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.appendingPathComponent(folder).path)
        return (enumerator?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".swift") }.map { folder + "/" + $0 }.sorted()
    }

    /// Tables the text names in SQL (after FROM, INTO, UPDATE, JOIN or TABLE, upper case as the sources write SQL).
    static func namedTables(in text: String) -> Set<String> {
        tables(in: text, after: #"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+([a-z_][a-z0-9_]*)"#)
    }

    /// Tables the text writes: INSERT INTO, UPDATE … SET, DELETE FROM.
    static func writtenTables(in text: String) -> Set<String> {
        tables(in: text, after: #"\b(?:INSERT INTO|DELETE FROM)\s+([a-z_][a-z0-9_]*)"#)
            .union(tables(in: text, after: #"\bUPDATE\s+([a-z_][a-z0-9_]*)\s+SET\b"#))
    }

    static func tables(in text: String, after pattern: String) -> Set<String> {
        let expression = try! NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        return Set(expression.matches(in: text, range: range).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } })
    }

    @Test func eachPersistenceModuleWritesTheTablesItOwnsAndNoOther() throws {
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Shared/Persistence").path)
        #expect(Set(modules) == Set(Self.owners.keys).union([Self.ledger]), "every persistence module declares its tables here")
        for (module, owned) in Self.owners {
            var written = Set<String>()
            for file in Self.swiftFiles(under: "Shared/Persistence/\(module)") { written.formUnion(Self.writtenTables(in: try Self.read(file))) }
            #expect(written == owned, "\(module) writes \(written.sorted()), owns \(owned.sorted())")
        }
    }

    /// SQL statements in a source: a table named after FROM, INTO, UPDATE, JOIN or TABLE, or a statement's first words.
    static func containsSQL(_ text: String) -> Bool {
        !namedTables(in: text).isEmpty
            || text.range(of: #"\b(SELECT [a-z*(]|INSERT INTO|DELETE FROM|CREATE (TABLE|INDEX|POLICY)|ALTER TABLE|GRANT [A-Z]+)"#,
                          options: .regularExpression) != nil
    }

    @Test func noFileOutsideAPersistenceModuleContainsSQL() throws {
        #expect(Self.containsSQL(try Self.read("Shared/Persistence/IdentityRecords/UserDirectory.swift")), "the check sees SQL")
        // The PostgreSQL wrapper speaks SQL of its own (transactions, settings, the migrator's bookkeeping), of no FaceGate table.
        let files = (Self.swiftFiles(under: "Services") + Self.swiftFiles(under: "Shared") + Self.swiftFiles(under: "Client"))
            .filter { !$0.hasPrefix("Shared/Persistence/") && !$0.hasPrefix("Shared/Wrappers/PostgresClient/") }
        #expect(files.count > 100, "the sources were read")
        for file in files {
            #expect(!Self.containsSQL(try Self.read(file)), "\(file) contains SQL; it belongs in a persistence module")
        }
    }

    @Test func everyTableOfTheSchemaHasOneOwner() throws {
        let schema = try Self.read("Shared/Persistence/\(Self.ledger)/Schema.swift")
        let created = Self.tables(in: schema, after: #"CREATE TABLE ([a-z_]+)"#)
        var owned = Set<String>()
        for tables in Self.owners.values {
            #expect(owned.isDisjoint(with: tables), "\(owned.intersection(tables).sorted()) have two owners")
            owned.formUnion(tables)
        }
        #expect(created == owned, "created but unowned: \(created.subtracting(owned).sorted()); owned but not created: \(owned.subtracting(created).sorted())")
    }

    /// The schema's grants, read as (privileges, tables, roles); column lists dropped.
    static func grants() throws -> [(privileges: Set<String>, tables: [String], roles: [String])] {
        let schema = try read("Shared/Persistence/\(ledger)/Schema.swift")
        let expression = try NSRegularExpression(pattern: #"GRANT ([A-Z, ]+?)(?: \([a-z_, ]+\))? ON ([a-z_,\s]+?) TO ([a-z_, ]+);"#)
        return expression.matches(in: schema, range: NSRange(schema.startIndex..., in: schema)).map { match in
            func group(_ index: Int) -> [String] {
                String(schema[Range(match.range(at: index), in: schema)!]).split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            }
            return (Set(group(1)), group(2), group(3))
        }
    }

    /// The targets a library target of Package.swift depends on, directly or through others.
    static func linked(by target: String) throws -> Set<String> {
        var found = Set<String>(), pending = [target]
        while let next = pending.popLast() {
            for dependency in try dependencies(of: next) where found.insert(dependency).inserted { pending.append(dependency) }
        }
        return found
    }

    /// The targets a library target of Package.swift names as its dependencies.
    static func dependencies(of target: String) throws -> Set<String> {
        let manifest = try read("Package.swift")
        let expression = try NSRegularExpression(pattern: #"name: "\#(target)",\s*dependencies: \[([^\]]*)\]"#)
        guard let match = expression.firstMatch(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)) else { return [] }
        return Set(String(manifest[Range(match.range(at: 1), in: manifest)!]).split(separator: ",")
            .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" \n")) })
    }

    @Test func aRoleWritesAnOwnedTableOnlyWhenItsServiceLinksTheOwner() throws {
        let grants = try Self.grants()
        #expect(grants.count > 20, "the schema's grants were read")
        for grant in grants where !grant.privileges.isDisjoint(with: ["INSERT", "UPDATE", "DELETE"]) {
            for role in grant.roles {
                guard let service = Self.roles[role] else { continue }
                let linked = try Self.linked(by: service)
                #expect(!linked.isEmpty, "Package.swift lists \(service)'s dependencies")
                for table in grant.tables {
                    guard let owner = Self.owners.first(where: { $0.value.contains(table) })?.key else { continue }
                    #expect(linked.contains(owner), "\(role) may write \(table), but \(service) does not link \(owner)")
                }
            }
        }
    }
}
