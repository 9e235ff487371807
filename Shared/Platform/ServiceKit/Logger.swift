import FaceGateCore
import Foundation
import Synchronization

public enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    private var rank: Int { LogLevel.allCases.firstIndex(of: self)! }
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// One JSON object per line on stdout: `ts`, `level`, `label`, `msg`, then dot-keyed metadata
/// (`request.id`, `job.id`, `app.id`). Metadata values must be safe to log: no secrets, no PII.
public struct Logger: Sendable {
    public var label: String
    public var level: LogLevel
    public var metadata: [String: String]

    public init(label: String, level: LogLevel = .info, metadata: [String: String] = [:]) {
        self.label = label
        self.level = level
        self.metadata = metadata
    }

    public func with(_ extra: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { _, new in new }
        return copy
    }

    public func debug(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.debug, message(), extra) }
    public func info(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.info, message(), extra) }
    public func warning(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.warning, message(), extra) }
    public func error(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.error, message(), extra) }

    public func log(_ level: LogLevel, _ message: String, _ extra: [String: String] = [:]) {
        guard level >= self.level else { return }
        var fields = metadata.merging(extra) { _, new in new }
        if fields["trace.id"] == nil, let trace = TraceContext.current { fields["trace.id"] = trace.traceId }
        fields["ts"] = RFC3339.string(from: Date())
        fields["level"] = level.rawValue
        fields["label"] = label
        fields["msg"] = message
        let line = fields.keys.sorted { Logger.order($0) < Logger.order($1) }
            .map { "\(JSONText.quoted($0)):\(JSONText.quoted(fields[$0]!))" }
            .joined(separator: ",")
        LogSink.write("{\(line)}\n")
    }

    private static func order(_ key: String) -> String {
        switch key {
        case "ts": "0"
        case "level": "1"
        case "label": "2"
        case "msg": "3"
        default: "4" + key
        }
    }
}

/// Serialises whole lines onto stdout so concurrent loggers never interleave within a line.
enum LogSink {
    static let lock = Mutex(())
    static func write(_ line: String) {
        lock.withLock { _ in
            var line = line
            line.withUTF8 { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }
}
