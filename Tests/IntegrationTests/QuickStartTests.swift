import FaceGateTestSupport
import Foundation
import Testing

/// The README's quick start, run as written: its own lines (all but sourcing the local stack's env, which the test's stack
/// stands in for) in bash, against a real stack with the matcher, in a fresh directory holding the photos where the README
/// says they are. A changed command, flag or output shape in the CLI fails here before a newcomer meets it.
@Suite struct QuickStartTests {
    static var readme: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
    }

    /// The shell block after the quick-start marker.
    static func quickStartLines() throws -> [String] {
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let marker = text.range(of: "<!-- quick-start:"), let open = text.range(of: "```sh\n", range: marker.upperBound..<text.endIndex),
              let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex) else {
            throw TestSetupError("README.md has no quick-start block")
        }
        return text[open.upperBound..<close.lowerBound].split(separator: "\n").map(String.init)
    }

    @Test func theReadmesQuickStartLogsInWithADeviceKeyAndExchanges() async throws {
        let lines = try Self.quickStartLines()
        #expect(lines.first?.hasPrefix(". .run/run/env") == true, "the first line sources the local stack's env")
        try await TestStack.with { stack in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("quick-start-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(".run"), withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent(".run/testdata").path,
                                                       withDestinationPath: try TestEnvironment.value("FACEGATE_TEST_IMAGES"))
            let script = "set -euo pipefail\ncd '\(directory.path)'\n" + lines.dropFirst().joined(separator: "\n")
            let path = try TestEnvironment.value("FACEGATE_BIN_DIR") + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let run = try ChildProcess.run("/usr/bin/env", ["-i", "PATH=\(path)", "HOME=\(directory.path)", "FACEGATE_URL=\(stack.baseURL)",
                                                            "FACEGATE_ADMIN_KEY=\(stack.adminKey)", "bash", "-c", script])
            #expect(run.exitCode == 0, "\(run.errorText)")
            // The last line's answer: the exchange names the user enrolled by the quick start, logged in by its device key.
            let last = try #require(run.output.split(separator: UInt8(ascii: "\n")).last, "the exchange answered")
            let exchanged = try JSONSerialization.jsonObject(with: Data(last)) as? [String: Any]
            #expect(exchanged?["employeeNumber"] as? String == "E1001" && exchanged?["name"] as? String == "Barack Obama", "\(String(decoding: run.output, as: UTF8.self))")
            #expect(exchanged?["method"] as? String == "face")
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("device.key").path), "the device key was kept")
            let app = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("my-app.json"))) as? [String: Any]
            #expect(app?["deviceBinding"] as? String == "dpop", "the quick start's app knows its devices by their keys")
        }
    }
}
