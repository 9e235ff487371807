import Foundation
import Synchronization

/// Prometheus metrics in the text exposition format. Label sets must stay small and bounded:
/// route templates, outcome codes, topic names — never raw paths, ids or user input.
public final class MetricsRegistry: Sendable {
    private let families = Mutex<[String: MetricFamily]>([:])
    private let order = Mutex<[String]>([])

    public init() {}

    public func counter(_ name: String, help: String) -> Counter {
        Counter(family: family(name, help: help, type: "counter", buckets: []))
    }

    public func gauge(_ name: String, help: String) -> Gauge {
        Gauge(family: family(name, help: help, type: "gauge", buckets: []))
    }

    /// A gauge read at scrape time.
    public func gauge(_ name: String, help: String, read: @escaping @Sendable () -> Double) {
        family(name, help: help, type: "gauge", buckets: []).reader.withLock { $0 = read }
    }

    /// A counter kept elsewhere (the kernel's CPU time) and read at scrape time.
    public func counter(_ name: String, help: String, read: @escaping @Sendable () -> Double) {
        family(name, help: help, type: "counter", buckets: []).reader.withLock { $0 = read }
    }

    public func histogram(_ name: String, help: String,
                          buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]) -> Histogram {
        Histogram(family: family(name, help: help, type: "histogram", buckets: buckets.sorted()))
    }

    private func family(_ name: String, help: String, type: String, buckets: [Double]) -> MetricFamily {
        families.withLock { all in
            if let existing = all[name] { return existing }
            let created = MetricFamily(name: name, help: help, type: type, buckets: buckets)
            all[name] = created
            order.withLock { $0.append(name) }
            return created
        }
    }

    public func render() -> String {
        let names = order.withLock { $0 }
        let snapshot = families.withLock { $0 }
        return names.compactMap { snapshot[$0]?.render() }.joined()
    }
}

final class MetricFamily: Sendable {
    let name: String
    let help: String
    let type: String
    let buckets: [Double]
    /// Keyed by the rendered label set.
    let values = Mutex<[String: Series]>([:])
    let reader = Mutex<(@Sendable () -> Double)?>(nil)

    struct Series {
        var value: Double = 0
        var bucketCounts: [UInt64] = []
        var sum: Double = 0
        var count: UInt64 = 0
    }

    init(name: String, help: String, type: String, buckets: [Double]) {
        self.name = name
        self.help = help
        self.type = type
        self.buckets = buckets
    }

    static func labelText(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let inner = labels.keys.sorted().map { key in
            let value = labels[key]!.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(value)\""
        }
        return inner.joined(separator: ",")
    }

    func update(_ labels: [String: String], _ body: (inout Series) -> Void) {
        let key = Self.labelText(labels)
        values.withLock { all in
            var series = all[key] ?? Series(bucketCounts: Array(repeating: 0, count: buckets.count))
            body(&series)
            all[key] = series
        }
    }

    func render() -> String {
        var out = "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        if let read = reader.withLock({ $0 }) {
            out += "\(name) \(format(read()))\n"
            return out
        }
        let snapshot = values.withLock { $0 }
        for key in snapshot.keys.sorted() {
            let series = snapshot[key]!
            if type == "histogram" {
                for (index, bound) in buckets.enumerated() {
                    out += "\(name)_bucket{\(join(key, "le=\"\(format(bound))\""))} \(series.bucketCounts[index])\n"
                }
                out += "\(name)_bucket{\(join(key, "le=\"+Inf\""))} \(series.count)\n"
                out += "\(name)_sum\(braces(key)) \(format(series.sum))\n\(name)_count\(braces(key)) \(series.count)\n"
            } else {
                out += "\(name)\(braces(key)) \(format(series.value))\n"
            }
        }
        return out
    }

    private func join(_ a: String, _ b: String) -> String { a.isEmpty ? b : a + "," + b }
    private func braces(_ key: String) -> String { key.isEmpty ? "" : "{\(key)}" }
    private func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

public struct Counter: Sendable {
    let family: MetricFamily
    public func increment(_ labels: [String: String] = [:], by amount: Double = 1) {
        family.update(labels) { $0.value += amount }
    }
}

public struct Gauge: Sendable {
    let family: MetricFamily
    public func set(_ value: Double, _ labels: [String: String] = [:]) { family.update(labels) { $0.value = value } }
    public func add(_ delta: Double, _ labels: [String: String] = [:]) { family.update(labels) { $0.value += delta } }
}

public struct Histogram: Sendable {
    let family: MetricFamily
    public func observe(_ value: Double, _ labels: [String: String] = [:]) {
        let buckets = family.buckets
        family.update(labels) { series in
            for (index, bound) in buckets.enumerated() where value <= bound { series.bucketCounts[index] += 1 }
            series.sum += value
            series.count += 1
        }
    }

    public func observe(_ duration: Duration, _ labels: [String: String] = [:]) {
        observe(duration.seconds, labels)
    }
}

extension Duration {
    public var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }

    public var milliseconds: Double { seconds * 1000 }
}
