import FaceGateTestSupport
import Foundation
import Testing

/// The local stack `make run` and `make test` start (scripts/stack.sh) is safe to leave running on a shared machine:
/// no database login without its password, and a state directory only its user can read.
@Suite struct LocalStackTests {
    static let roles = ["postgres", "facegate_owner", "facegate_gateway", "facegate_matcher", "facegate_ctid", "facegate_kiosk"]

    static func setting(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw TestSetupError("\(name) is not set: run the tests with `make test`, which starts the local stack")
        }
        return value
    }

    /// psql as `role` at `host` (an address or the socket's directory) with no password file; `password` in PGPASSWORD.
    static func login(_ role: String, host: String, password: String?) throws -> ChildProcess.Output {
        let port = try #require(URLComponents(string: try setting("FACEGATE_TEST_DATABASE_URL"))?.port)
        let credentials = password.map { ["PGPASSWORD=\($0)"] } ?? ["-u", "PGPASSWORD"]
        return try ChildProcess.run("/usr/bin/env", credentials + ["PGPASSFILE=/dev/null", "psql", "-w", "-X", "-h", host,
                                                                   "-p", "\(port)", "-U", role, "-d", "postgres", "-tAc", "SELECT 1"],
                                    timeout: .seconds(30))
    }

    /// Every role, the superuser included, is refused without its password over TCP and over the socket, and with a wrong
    /// one; its own password (from the profile's 0600 file) lets it in, so the refusals are the server's rule.
    @Test func everyDatabaseLoginNeedsItsPassword() throws {
        let state = URL(fileURLWithPath: try Self.setting("FACEGATE_TEST_STATE_DIR"))
        let passwords = Dictionary(uniqueKeysWithValues: try String(contentsOf: state.appendingPathComponent("db-passwords"), encoding: .utf8)
            .split(separator: "\n").map { line in
                let parts = line.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            })
        for host in ["127.0.0.1", try Self.setting("FACEGATE_TEST_DATABASE_SOCKET")] {
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

    /// The state directory (keys, passwords, the env file, logs) and everything in it grant nothing to group or others.
    @Test func theStateDirectoryIsItsUsersAlone() throws {
        let state = try Self.setting("FACEGATE_TEST_STATE_DIR")
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
