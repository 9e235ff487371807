import Synchronization

/// Run-time parameters that every statement a task sends through a `PostgresPool` makes with `SET LOCAL`
/// (`set_config(name, value, true)`): keys for row-level security policies, say.
///
/// Bind one with `PostgresScope.$current.withValue(scope) { … }`. The scope is a reference, so code running
/// inside it can still name a value (an HTTP handler once it has authenticated its caller); the next
/// transaction the task starts uses the values the scope holds then. A statement sent outside a transaction
/// while the scope holds values runs in one of its own (BEGIN, the settings, the statement, COMMIT).
public final class PostgresScope: Sendable {
    private let values: Mutex<[String: String]>

    @TaskLocal public static var current: PostgresScope?

    public init(_ values: [String: String] = [:]) {
        self.values = Mutex(values)
    }

    public func set(_ name: String, to value: String) {
        values.withLock { $0[name] = value }
    }

    public subscript(name: String) -> String? {
        values.withLock { $0[name] }
    }

    /// The values to set in the next transaction, in a fixed order.
    var settings: [(name: String, value: String)] {
        values.withLock { $0.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) } }
    }
}
