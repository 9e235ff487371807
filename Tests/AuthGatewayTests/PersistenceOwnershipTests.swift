import Foundation
import Testing

/// Who owns which table, read from the sources and the schema: a table owned by a persistence module
/// (`Shared/Persistence/`) is named in SQL by that module only, the module writes no other table, the platform layer
/// holds no domain table and is alone in naming its own, and a service's database role may write an owned table only
/// when the service links its owner.
@Suite struct PersistenceOwnershipTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each persistence module and the tables it owns.
    static let owners: [String: Set<String>] = [
        "AuditRecords": ["transactions", "transaction_chain_heads"],
        "KioskSessionRecords": ["kiosk_sessions", "kiosk_events"],
        "CTIDRecords": ["ctid_serials", "ctid_registry"],
    ]
    /// The platform's own tables, which only ServiceKit names.
    static let platformTables: Set = ["reply_partition_leases", "processed_messages"]
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
        #expect(Set(modules) == Set(Self.owners.keys), "every persistence module declares its tables here")
        for (module, owned) in Self.owners {
            var written = Set<String>()
            for file in Self.swiftFiles(under: "Shared/Persistence/\(module)") { written.formUnion(Self.writtenTables(in: try Self.read(file))) }
            #expect(written == owned, "\(module) writes \(written.sorted()), owns \(owned.sorted())")
        }
    }

    @Test func noOtherCodeNamesAnOwnedTable() throws {
        let owned = Self.owners.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        for file in Self.swiftFiles(under: "Services") + Self.swiftFiles(under: "Shared") where !file.hasSuffix("FaceGateCore/Schema.swift") {
            let named = Self.namedTables(in: try Self.read(file))
            if !file.hasPrefix("Shared/Persistence/") {
                #expect(named.isDisjoint(with: owned), "\(file) names \(named.intersection(owned).sorted()) in SQL")
            }
            if !file.hasPrefix("Shared/Platform/ServiceKit/") {
                #expect(named.isDisjoint(with: Self.platformTables), "\(file) names the platform's \(named.intersection(Self.platformTables).sorted())")
            }
        }
    }

    @Test func thePlatformLayerHoldsNoDomainTable() throws {
        for file in Self.swiftFiles(under: "Shared/Platform/ServiceKit") {
            let named = Self.namedTables(in: try Self.read(file)).subtracting(Self.platformTables).subtracting(["generate_series"])
            #expect(named.isEmpty, "\(file) names \(named.sorted()) in SQL")
        }
    }

    /// The schema's grants, read as (privileges, tables, roles); column lists dropped.
    static func grants() throws -> [(privileges: Set<String>, tables: [String], roles: [String])] {
        let schema = try read("Shared/Domain/FaceGateCore/Schema.swift")
        let expression = try NSRegularExpression(pattern: #"GRANT ([A-Z, ]+?)(?: \([a-z_, ]+\))? ON ([a-z_,\s]+?) TO ([a-z_, ]+);"#)
        return expression.matches(in: schema, range: NSRange(schema.startIndex..., in: schema)).map { match in
            func group(_ index: Int) -> [String] {
                String(schema[Range(match.range(at: index), in: schema)!]).split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            }
            return (Set(group(1)), group(2), group(3))
        }
    }

    /// The targets a library target of Package.swift depends on.
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
                let linked = try Self.dependencies(of: service)
                #expect(!linked.isEmpty, "Package.swift lists \(service)'s dependencies")
                for table in grant.tables {
                    guard let owner = Self.owners.first(where: { $0.value.contains(table) })?.key else { continue }
                    #expect(linked.contains(owner), "\(role) may write \(table), but \(service) does not link \(owner)")
                }
            }
        }
    }
}
