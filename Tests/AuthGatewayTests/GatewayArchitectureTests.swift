import Foundation
import Testing

/// The gateway's structure, read from its sources: route collections hold only what they call, learn their caller from
/// the context their group proved, and are built in one place.
@Suite struct GatewayArchitectureTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Services/AuthGateway/Sources")

    struct Collection {
        var name: String
        var file: String
        /// The whole file, where its handlers and helpers are.
        var text: String
        var storedProperties: [(name: String, type: String)]
    }

    /// The persistence modules, from the gateway's sources.
    static let persistence = "../../../Shared/Persistence"

    static func read(_ path: String) throws -> String { try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8) }

    static func swiftFiles(_ folder: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: sources.appendingPathComponent(folder).path)
            .filter { $0.hasSuffix(".swift") }.map { folder.isEmpty ? $0 : folder + "/" + $0 }.sorted()
    }

    /// Every `struct X: RouteCollection` and the `let`s of its own body (not those of types nested in it).
    static func collections() throws -> [Collection] {
        try swiftFiles().compactMap { file in
            let text = try read(file)
            let lines = text.components(separatedBy: "\n")
            guard let start = lines.firstIndex(where: { $0.hasPrefix("struct ") && $0.contains(": RouteCollection {") }) else { return nil }
            let name = String(lines[start].dropFirst("struct ".count).prefix { $0 != ":" })
            let end = lines[start...].firstIndex(of: "}") ?? lines.count
            let properties = lines[start..<end].compactMap { line -> (String, String)? in
                guard line.hasPrefix("    let "), let colon = line.firstIndex(of: ":") else { return nil }
                let name = line[line.index(line.startIndex, offsetBy: 8)..<colon]
                return (String(name), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            return Collection(name: name, file: file, text: text, storedProperties: properties)
        }
    }

    /// Names of the types a folder declares (`struct`, `final class`, `enum`, `protocol`).
    static func declaredTypes(in files: [String], kinds: [String]) throws -> Set<String> {
        var names = Set<String>()
        for file in files {
            for line in try read(file).components(separatedBy: "\n") {
                for kind in kinds where ["", "public ", "package "].contains(where: { line.hasPrefix($0 + kind + " ") }) {
                    let rest = line.components(separatedBy: kind + " ").dropFirst().joined(separator: kind + " ")
                    names.insert(String(rest.prefix { $0.isLetter || $0.isNumber }))
                }
            }
        }
        return names
    }

    @Test func routeCollectionsHoldOnlyTheUseCasesAndStoresTheyCall() throws {
        let useCases = try Self.declaredTypes(in: try Self.swiftFiles("UseCases"), kinds: ["struct", "final class"])
        // The persistence modules' repositories: their protocols, and the few concrete stores.
        let persistence = try FileManager.default.contentsOfDirectory(atPath: Self.sources.appendingPathComponent(Self.persistence).path)
            .flatMap { try Self.swiftFiles(Self.persistence + "/" + $0) }
        let stores = try Self.declaredTypes(in: persistence, kinds: ["protocol"]).map { "any " + $0 }
            + Self.declaredTypes(in: persistence, kinds: ["struct", "final class"])
        #expect(stores.contains("any AppStore") && stores.contains("KioskSessionStore"), "\(stores.sorted())")
        // Proofs of the device a call comes from, which sign the body and so are checked with it (`DeviceProofs`).
        let proofs: Set = ["DeviceProofs", "KioskProofs"]
        // What the public routes serve as they are, and the event streams' connection slots.
        let served: [String: Set<String>] = ["DiscoveryRoutes": ["[UInt8]", "String?"], "ConsoleRoutes": ["ConsoleFiles"],
                                             "KioskSessionRoutes": ["EventStreamSlots"]]
        let collections = try Self.collections()
        #expect(collections.count >= 15, "\(collections.map(\.name))")
        for collection in collections {
            for (name, type) in collection.storedProperties {
                let allowed = useCases.contains(type) || stores.contains(type) || proofs.contains(type)
                    || served[collection.name]?.contains(type) == true
                #expect(allowed, "\(collection.name).\(name): \(type) is not a use case, a store or a device proof")
                let uses = collection.text.components(separatedBy: name).count - 1
                #expect(uses >= 2, "\(collection.name).\(name) is never called")
            }
        }
    }

    @Test func noRouteHandlerReadsCredentialsToLearnItsCaller() throws {
        // (Callers' own proofs are private to it: a collection cannot call them at all.)
        let forbidden = [#"headers["Authorization"]"#, #"headers["DPoP"]"#, #"headers["X-Interview-Token"]"#, "bearer(", "Callers(", "JWT.verify"]
        for collection in try Self.collections() {
            for pattern in forbidden {
                #expect(!collection.text.contains(pattern), "\(collection.file) reads \(pattern): a route learns its caller from its group's proof")
            }
        }
    }

    @Test func everyDependencyIsBuiltInTheCompositionRoot() throws {
        let root = try Self.read("Gateway.swift")
        for collection in try Self.collections() {
            #expect(root.contains(collection.name + "("), "\(collection.name) is never booted by GatewayComposition")
        }
        // Stores, worker clients and use cases are built once, in the root: no other file of the gateway builds one.
        let builders = try Self.swiftFiles().filter { $0 != "Gateway.swift" }
        for file in builders {
            let text = try Self.read(file)
            #expect(!text.contains("(database:"), "\(file) builds a store; only GatewayComposition does")
            #expect(!text.contains("(requester:"), "\(file) builds a worker client; only GatewayComposition does")
        }
    }

    /// The workers' job handlers and the platform's job consumer each have tests that start no server: built over twins
    /// (no test stack, test database, broker client or HTTP server in their sources).
    @Test func everyWorkersHandlerHasTestsThatStartNoServer() throws {
        let tests = Self.sources.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Tests")
        let handlers = ["MatcherWorkerTests": "FaceJobHandler(", "CTIDVerifierTests": "CTIDJobHandler(", "KioskOrchestratorTests": "KioskFlow(",
                        "ServiceKitTests": "JobConsumer("]
        for (target, construction) in handlers.sorted(by: { $0.key < $1.key }) {
            let folder = tests.appendingPathComponent(target)
            let texts = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
                .map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }
            #expect(texts.contains { $0.contains(construction) && $0.contains("@Test") }, "\(target) does not test \(construction)")
            for server in ["TestStack", "TestDatabase", "KafkaConsumer(", "KafkaProducer(", "HTTPServer(", "PostgresPool("] {
                #expect(!texts.contains { $0.contains(server) }, "\(target) starts a server (\(server))")
            }
        }
    }
}
