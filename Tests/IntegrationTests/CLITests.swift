import FaceGateCLI
import Foundation
import ServiceKit
import Testing

/// The operator's command line against a running gateway: help never acts, bad options stop with
/// exit 2 before any call.
@Suite(.serialized) struct CLITests {
    @Test func helpVersionAndBadOptionsChangeNothing() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let environment = Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])
            func apps() async throws -> [[String: Any]] {
                try #require(try await stack.call("GET", "/v1/apps", bearer: stack.adminKey).json["items"] as? [[String: Any]])
            }
            let before = try await apps().count
            #expect(await FaceGateCLI.run(["app", "create", "--help"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["--version"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["app", "create", "--formal"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "create", "bad", "--threshold", "abc"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["app", "create", "bad", "--threshold"], environment: environment) == 2)
            #expect(try await apps().count == before)

            #expect(await FaceGateCLI.run(["app", "create", "legacy", "--binding", "header", "--threshold", "0.9"], environment: environment) == 0)
            let legacy = try #require(try await apps().first { $0["name"] as? String == "legacy" })
            #expect(legacy["deviceBinding"] as? String == "header")
            #expect(abs((legacy["matchThreshold"] as? Double ?? 0) - 0.9) < 1e-6)
            let id = try #require(legacy["appId"] as? String)
            #expect(await FaceGateCLI.run(["app", "binding", id, "dpop", "boundDevice"], environment: environment) == 0)
            let patched = try await stack.call("GET", "/v1/apps/\(id)", bearer: stack.adminKey)
            #expect(patched.string("deviceBinding") == "dpop" && patched.string("deviceBindingPolicy") == "boundDevice")
            #expect(await FaceGateCLI.run(["app", "binding", id, "sideways"], environment: environment) == 1)
            #expect(await FaceGateCLI.run(["user", "list", id], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["audit", "export", "appId=\(id)"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["audit", "export", "appId=not-a-uuid"], environment: environment) == 1)
        }
    }

    @Test func operatorAndAuditorKeysFromTheCommandLine() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let environment = Environment(["FACEGATE_URL": stack.baseURL, "FACEGATE_ADMIN_KEY": stack.adminKey])
            let app = try await stack.createApp()
            func keys(_ path: String) async throws -> [[String: Any]] {
                try #require(try await stack.call("GET", path, bearer: stack.adminKey).json["items"] as? [[String: Any]])
            }
            #expect(await FaceGateCLI.run(["operator-key", "create", "team", app.id, "--expires", "2099-01-01T00:00:00Z"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["operator-key", "create", "team", "--expires", "next week"], environment: environment) == 2)
            #expect(await FaceGateCLI.run(["auditor", "create", "audit", app.id], environment: environment) == 0)
            let created = try #require(try await keys("/v1/operator-keys").first)
            #expect(created["appIds"] as? [String] == [app.id])
            #expect((created["expiresAt"] as? String)?.hasPrefix("2099-01-01") == true)
            let auditor = try #require(try await keys("/v1/auditors").first?["auditorId"] as? String)
            #expect(await FaceGateCLI.run(["operator-key", "list"], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["operator-key", "revoke", try #require(created["operatorKeyId"] as? String)], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["auditor", "revoke", auditor], environment: environment) == 0)
            #expect(await FaceGateCLI.run(["auditor", "revoke", UUID().uuidString], environment: environment) == 1)
            #expect(try await keys("/v1/operator-keys").allSatisfy { $0["revokedAt"] is String })
            #expect(try await keys("/v1/auditors").allSatisfy { $0["revokedAt"] is String })
        }
    }
}
