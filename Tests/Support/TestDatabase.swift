import FaceGateCore
import FaceGateSchema
import Foundation
import PostgresClient
import ServiceKit

public struct TestSetupError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh database with the schema applied, dropped by `drop()`.
public struct TestDatabase: Sendable {
    public let name: String
    public let url: String
    /// The schema owner's, reading every app's rows.
    public let pool: PostgresPool
    let admin: PostgresPool

    public static func create() async throws -> TestDatabase {
        guard let base = ProcessInfo.processInfo.environment["FACEGATE_TEST_DATABASE_URL"], !base.isEmpty else {
            throw TestSetupError("FACEGATE_TEST_DATABASE_URL is not set: run the tests with `make test`, which starts PostgreSQL")
        }
        let admin = PostgresPool(configuration: try PostgresConfiguration(url: base))
        let name = "fg_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        // As in `make run`: the cluster administrator makes the database for the schema owner, which migrates
        // it as a non-superuser; each service then logs in with its own role (`url(for:)`).
        _ = try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name) OWNER facegate_owner"))
        guard var components = URLComponents(string: base) else { throw TestSetupError("FACEGATE_TEST_DATABASE_URL is not a URL") }
        components.path = "/" + name
        components.user = "facegate_owner"
        let url = components.string!
        // The tests inspect and arrange every app's rows as the schema owner: row-level security is FORCEd,
        // so the owner too names the explicit every-app scope, for the whole session.
        var configuration = try PostgresConfiguration(url: url)
        configuration.sessionSettings = [Tenant.setting: Tenant.everyApp]
        let pool = PostgresPool(configuration: configuration)
        try await ServiceRuntime.migrate(pool)
        return TestDatabase(name: String(name), url: String(url), pool: pool, admin: admin)
    }

    /// The URL a service uses: its own login role (never the owner or a superuser), on this database.
    public func url(for service: String) -> String {
        var components = URLComponents(string: url)!
        components.user = Schema.serviceLogins[service]!
        return components.string!
    }

    public func drop() async {
        await pool.close()
        _ = try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        await admin.close()
    }
}
