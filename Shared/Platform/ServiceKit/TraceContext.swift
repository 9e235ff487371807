import Foundation
import FaceGateCore
import KafkaClient

/// W3C Trace Context: the trace a piece of work belongs to. It arrives in an HTTP `traceparent` header
/// (or one made up at the edge), rides in a task-local while the request or job runs, goes out with every
/// job that work sends (a child span of the same trace), and appears as `trace.id` on every log line
/// written meanwhile — so one id finds a login's lines in the gateway and in the matcher that served it.
public struct TraceContext: Sendable, Equatable {
    /// 32 lowercase hex digits, not all zero.
    public let traceId: String
    /// 16 lowercase hex digits, not all zero: the span that sent the work.
    public let spanId: String
    public let sampled: Bool

    @TaskLocal public static var current: TraceContext?

    /// Parses a `traceparent` (version 00, or a later version's first four fields); nil for anything
    /// malformed, as the specification asks (the receiver then starts a new trace).
    public init?(traceparent: String) {
        let fields = traceparent.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count >= 4, fields[0].count == 2, fields[0] != "ff", Self.isHex(fields[0]),
              fields[0] != "00" || fields.count == 4,
              fields[1].count == 32, Self.isHex(fields[1]), fields[1] != String(repeating: "0", count: 32),
              fields[2].count == 16, Self.isHex(fields[2]), fields[2] != String(repeating: "0", count: 16),
              fields[3].count == 2, Self.isHex(fields[3]), let flags = UInt8(fields[3], radix: 16) else { return nil }
        traceId = String(fields[1])
        spanId = String(fields[2])
        sampled = flags & 1 == 1
    }

    private init(traceId: String, spanId: String, sampled: Bool) {
        self.traceId = traceId
        self.spanId = spanId
        self.sampled = sampled
    }

    /// A new trace.
    public static func random() -> TraceContext {
        TraceContext(traceId: randomHex(16), spanId: randomHex(8), sampled: true)
    }

    /// The context of work sent from this one: the same trace, a new span.
    public func child() -> TraceContext {
        TraceContext(traceId: traceId, spanId: Self.randomHex(8), sampled: sampled)
    }

    public var traceparent: String { "00-\(traceId)-\(spanId)-\(sampled ? "01" : "00")" }

    /// The value for an outgoing job: a child of the current trace, or a new trace.
    public static func outgoing() -> String {
        (current?.child() ?? random()).traceparent
    }

    /// The `traceparent` header every record a service sends carries (`outgoing()`), so a job, its reply, the gallery
    /// change, kiosk event or audit record it caused all belong to the call's trace.
    public static var header: KafkaHeader { KafkaHeader(key: MessageHeader.traceparent, value: Array(outgoing().utf8)) }

    private static func isHex(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    private static func randomHex(_ bytes: Int) -> String {
        var text = ""
        repeat {
            text = (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        } while text.allSatisfy { $0 == "0" }
        return text
    }
}
