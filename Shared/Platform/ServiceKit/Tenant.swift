import FaceGateCore
import Foundation
import PostgresClient

/// Whose rows a task's statements may touch. Every table holding an app's data has row-level security FORCEd
/// (migration 13): a transaction sees and writes only the rows of the app it names with
/// `SET LOCAL facegate.app_id`; with nothing named it sees nothing. Reading (and sweeping) across apps takes
/// the explicit `acrossApps` scope; nothing writes across apps.
public enum Tenant {
    public static let setting = "facegate.app_id"
    /// The value of `setting` that reads every app's rows.
    public static let everyApp = "*"

    /// Runs `body` with every statement confined to `appId`'s rows.
    public static func run<T>(app appId: UUID, _ body: () async throws -> T) async rethrows -> T {
        try await PostgresScope.$current.withValue(PostgresScope([setting: appId.uuidString.lowercased()])) {
            try await body()
        }
    }

    /// Runs `body` reading (or sweeping) every app's rows: the gallery load, operator listings, retention.
    public static func acrossApps<T>(_ body: () async throws -> T) async rethrows -> T {
        try await PostgresScope.$current.withValue(PostgresScope([setting: everyApp])) { try await body() }
    }

    /// Runs `body` (one HTTP request) in a scope that names no app yet; `enter(app:)` names it once the caller
    /// is known, so a request sees only its caller's app from then on. `continuing`: the scope an earlier part of the
    /// same request entered (its admission, which authenticated the caller before the body was read).
    public static func request<T>(continuing scope: PostgresScope? = nil, _ body: () async throws -> T) async rethrows -> T {
        try await PostgresScope.$current.withValue(scope ?? PostgresScope()) { try await body() }
    }

    /// Confines the rest of the current request (see `request`) to `appId`'s rows.
    public static func enter(app appId: UUID) {
        PostgresScope.current?.set(setting, to: appId.uuidString.lowercased())
    }

    /// Lets the rest of the current request read every app's rows (an operator's or auditor's listing).
    public static func enterAcrossApps() {
        PostgresScope.current?.set(setting, to: everyApp)
    }
}
