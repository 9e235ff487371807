import Crypto
import FaceGateTestSupport
import Foundation
import Testing

/// The local stack `make run` and `make test` start (scripts/stack.sh) is safe to leave running on a shared machine:
/// no database login without its password, and a state directory only its user can read.
@Suite struct LocalStackTests {
    static let roles = ["postgres", "facegate_owner", "facegate_gateway", "facegate_matcher", "facegate_ctid", "facegate_kiosk"]

    /// The NAME=value lines of `text` (db-passwords, `env`'s output); the first of a name twice wins.
    static func assignments(_ text: String) -> [String: String] {
        Dictionary(text.split(separator: "\n").map { line in
            let parts = line.split(separator: "=", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }, uniquingKeysWith: { first, _ in first })
    }

    /// psql as `role` at `host` (an address or the socket's directory) with no password file; `password` in PGPASSWORD.
    static func login(_ role: String, host: String, password: String?) throws -> ChildProcess.Output {
        let port = try #require(URLComponents(string: try TestEnvironment.value("FACEGATE_TEST_DATABASE_URL"))?.port)
        let credentials = password.map { ["PGPASSWORD=\($0)"] } ?? ["-u", "PGPASSWORD"]
        return try ChildProcess.run("/usr/bin/env", credentials + ["PGPASSFILE=/dev/null", "psql", "-w", "-X", "-h", host,
                                                                   "-p", "\(port)", "-U", role, "-d", "postgres", "-tAc", "SELECT 1"],
                                    timeout: .seconds(30))
    }

    /// Every role, the superuser included, is refused without its password over TCP and over the socket, and with a wrong
    /// one; its own password (from the profile's 0600 file) lets it in, so the refusals are the server's rule.
    @Test func everyDatabaseLoginNeedsItsPassword() throws {
        let state = URL(fileURLWithPath: try TestEnvironment.value("FACEGATE_TEST_STATE_DIR"))
        let passwords = Self.assignments(try String(contentsOf: state.appendingPathComponent("db-passwords"), encoding: .utf8))
        for host in ["127.0.0.1", try TestEnvironment.value("FACEGATE_TEST_DATABASE_SOCKET")] {
            for role in Self.roles {
                let password = try #require(passwords[role], "no password for \(role)")
                let without = try Self.login(role, host: host, password: nil)
                #expect(without.exitCode != 0, "\(role) at \(host) logged in without a password")
                #expect(without.errorText.contains("password"), "\(role) at \(host): \(without.errorText)")
                let wrong = try Self.login(role, host: host, password: password + "x")
                #expect(wrong.exitCode != 0, "\(role) at \(host) logged in with a wrong password")
                #expect(wrong.errorText.contains("password authentication failed"), "\(role) at \(host): \(wrong.errorText)")
                let right = try Self.login(role, host: host, password: password)
                #expect(right.exitCode == 0, "\(role) at \(host) with its password: \(right.errorText)")
            }
        }
    }

    /// What scripts/service-env.sh (through which `make run` starts every service) hands each kind of service, from an
    /// environment holding every key: only the keys the README's table gives it, as scripts/check-service-keys.sh (the
    /// same check it runs on the live processes) reads them, with its own message-signing key and, for the gateway, the
    /// operator key's SHA-256. The checker refuses the gateway's keys for a matcher, so it is no rubber stamp.
    @Test func eachServiceIsHandedOnlyTheKeysItUses() throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts").path
        let kinds = ["auth-gateway", "matcher-worker", "ctid-verifier", "kiosk-orchestrator"]
        var everything = ["FACEGATE_ADMIN_KEY": "operator-key", "FACEGATE_SIGNING_KEY": "token-key", "FACEGATE_SEALING_KEY": "sealing-key",
                          "FACEGATE_CTID_PRIVATE_KEY": "ctid-private", "FACEGATE_CTID_PUBLIC_KEY": "ctid-public",
                          "FACEGATE_KIOSK_SIGNING_KEY": "kiosk-key", "FACEGATE_AUDIT_KEY": "audit-key", "PGPASSFILE": "/tmp/pgpass",
                          "FACEGATE_TEST_DATABASE_URL": "postgres://postgres@127.0.0.1:1/postgres"]
        for kind in kinds { everything["FACEGATE_SERVICE_KEY_" + kind.uppercased().replacingOccurrences(of: "-", with: "_")] = "key-of-\(kind)" }
        let expected: [String: Set<String>] = [
            "auth-gateway": ["FACEGATE_SIGNING_KEY", "FACEGATE_CTID_PUBLIC_KEY", "FACEGATE_ADMIN_KEY_SHA256", "FACEGATE_AUDIT_KEY"],
            "matcher-worker": ["FACEGATE_SEALING_KEY"],
            "ctid-verifier": ["FACEGATE_SEALING_KEY", "FACEGATE_CTID_PRIVATE_KEY", "FACEGATE_AUDIT_KEY"],
            "kiosk-orchestrator": ["FACEGATE_KIOSK_SIGNING_KEY", "FACEGATE_SEALING_KEY", "FACEGATE_AUDIT_KEY"],
        ]
        var handed: [String: Data] = [:]
        for kind in kinds {
            let run = try ChildProcess.run("/usr/bin/env", ["-i", "PATH=/usr/bin:/bin"] + everything.map { "\($0.key)=\($0.value)" }
                                           + ["\(scripts)/service-env.sh", kind, "/usr/bin/env"], timeout: .seconds(30))
            #expect(run.exitCode == 0, "\(kind): \(run.errorText)")
            handed[kind] = run.output
            let held = Self.assignments(String(decoding: run.output, as: UTF8.self))
            let keys = Set(held.keys).subtracting(["PATH", "PWD", "SHLVL", "_", "FACEGATE_SERVICE_KEY"])
            #expect(keys == expected[kind], "\(kind) holds \(keys.sorted())")
            #expect(held["FACEGATE_SERVICE_KEY"] == "key-of-\(kind)")
            if kind == "auth-gateway" {
                let digest = Hex.encode(SHA256.hash("operator-key"))
                #expect(held["FACEGATE_ADMIN_KEY_SHA256"] == digest)
            }
            let check = try ChildProcess.run("\(scripts)/check-service-keys.sh", ["--names", kind], input: run.output, timeout: .seconds(30))
            #expect(check.exitCode == 0, "\(kind): \(String(decoding: check.output, as: UTF8.self))")
        }
        let misplaced = try ChildProcess.run("\(scripts)/check-service-keys.sh", ["--names", "matcher-worker"],
                                             input: try #require(handed["auth-gateway"]), timeout: .seconds(30))
        #expect(misplaced.exitCode == 1)
        #expect(String(decoding: misplaced.output, as: UTF8.self).contains("matcher-worker holds FACEGATE_SIGNING_KEY"))
    }

    /// The state directory (keys, passwords, the env file, logs) and everything in it grant nothing to group or others.
    @Test func theStateDirectoryIsItsUsersAlone() throws {
        let state = try TestEnvironment.value("FACEGATE_TEST_STATE_DIR")
        var checked = 0
        var open: [String] = []
        func inspect(_ path: String) throws {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let type = attributes[.type] as? FileAttributeType
            guard type == .typeRegular || type == .typeDirectory else { return }  // the database's socket, links
            let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value ?? 0o777
            if mode & 0o077 != 0 { open.append("\(path) \(String(mode, radix: 8))") }
            checked += 1
            if type == .typeDirectory {
                for name in try FileManager.default.contentsOfDirectory(atPath: path) { try? inspect(path + "/" + name) }
            }
        }
        try inspect(state)
        for file in ["db-passwords", "pgpass", "keys", "service-keys", "audit-key", "env"] {
            #expect(FileManager.default.fileExists(atPath: state + "/" + file), "\(file) is missing from \(state)")
        }
        #expect(checked > 6)
        #expect(open.isEmpty, "readable by others: \(open.prefix(10))")
    }
}
