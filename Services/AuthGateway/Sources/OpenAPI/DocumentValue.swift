import Foundation
import ServiceKit

/// A JSON value that keeps its objects' key order, written as Swift literals: the OpenAPI document is built from these,
/// so that it reads in the order the routes and fields were declared.
indirect enum DocumentValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int)
    case number(Double)
    case string(String)
    case array([DocumentValue])
    case object([(String, DocumentValue)])

    static func == (lhs: DocumentValue, rhs: DocumentValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The value at `key` of an object.
    subscript(key: String) -> DocumentValue? {
        get {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.0 == key }?.1
        }
        set {
            guard case .object(var members) = self else { return }
            if let index = members.firstIndex(where: { $0.0 == key }) {
                if let newValue { members[index].1 = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key, newValue))
            }
            self = .object(members)
        }
    }

    /// An object's keys, in order.
    var keys: [String] {
        guard case .object(let members) = self else { return [] }
        return members.map(\.0)
    }

    /// This object with `other`'s members added, `other` winning where both have a key.
    func merging(_ other: DocumentValue) -> DocumentValue {
        guard case .object(let members) = other else { return self }
        var merged = self
        for (key, value) in members { merged[key] = value }
        return merged
    }

    /// JSON text, indented by two spaces per level; arrays of scalars stay on one line.
    func json(indent: String = "") -> String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
            return "\(value)"
        case .string(let value): return JSONText.quoted(value)
        case .array(let items):
            if items.isEmpty { return "[]" }
            if items.allSatisfy(\.isScalar) { return "[" + items.map { $0.json() }.joined(separator: ", ") + "]" }
            let inner = indent + "  "
            return "[\n" + items.map { inner + $0.json(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            let inner = indent + "  "
            return "{\n" + members.map { inner + JSONText.quoted($0.0) + ": " + $0.1.json(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }
}

extension DocumentValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .integer(value) }
    init(floatLiteral value: Double) { self = .number(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: DocumentValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, DocumentValue)...) { self = .object(elements) }
    init(nilLiteral: ()) { self = .null }
}
