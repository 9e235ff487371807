import FaceGateCore
import Foundation

/// A request or answer body the API document names in `components/schemas`. Its schema is read from its `Decodable`
/// conformance by `SchemaRecorder`: the fields it decodes, which of them are optional, and their types, so a field added to
/// the type is in the document without anyone writing it there.
protocol DocumentedSchema {
    /// The name in `components/schemas`; the type's own name by default.
    static var schemaName: String { get }
    /// Keywords added to the read schema: under `""` for the schema itself (a description, an example), else per field
    /// (a description, a format, bounds). A note on a field the type does not have fails the document's generation.
    static var schemaNotes: [String: DocumentValue] { get }
    /// Fields the type writes but does not read back (a constant that tells answers apart), as required fields.
    static var encodedOnly: [(String, DocumentValue)] { get }
}

extension DocumentedSchema {
    static var schemaName: String { String(describing: self) }
    static var schemaNotes: [String: DocumentValue] { [:] }
    static var encodedOnly: [(String, DocumentValue)] { [] }
}

/// An answer that is one of several documented types, told apart by the constant value of one field.
protocol DocumentedUnion: DocumentedSchema {
    static var discriminator: String { get }
    /// Each alternative by its value of `discriminator`.
    static var alternatives: [(String, any DocumentedSchema.Type)] { get }
}

/// The cases of a string enumeration (`CaseIterable` with `String` raw values), named or not.
private func enumeration(_ type: Any.Type) -> (schema: DocumentValue, first: Any)? {
    guard let cases = type as? any CaseIterable.Type else { return nil }
    let all = Array(cases.allCases) as [Any]
    let values = all.compactMap { ($0 as? any RawRepresentable)?.rawValue as? String }
    guard let first = all.first, values.count == all.count else { return nil }
    return (["type": "string", "enum": .array(values.map { .string($0) })], first)
}

/// A value written as one JSON scalar (a `JSONValue` field: any JSON): its schema, and a value to
/// hand a type's decoder while its fields are read.
protocol DocumentedScalar: Decodable {
    static var scalarSchema: DocumentValue { get }
    static var placeholder: Self { get }
}

extension String: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "string"] }
    static var placeholder: String { "" }
}
extension Bool: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "boolean"] }
    static var placeholder: Bool { false }
}
extension DocumentedScalar where Self: FixedWidthInteger {
    static var scalarSchema: DocumentValue { ["type": "integer"] }
    static var placeholder: Self { 0 }
}
extension Int: DocumentedScalar {}
extension Int8: DocumentedScalar {}
extension Int16: DocumentedScalar {}
extension Int32: DocumentedScalar {}
extension Int64: DocumentedScalar {}
extension UInt: DocumentedScalar {}
extension UInt8: DocumentedScalar {}
extension UInt16: DocumentedScalar {}
extension UInt32: DocumentedScalar {}
extension UInt64: DocumentedScalar {}
extension Double: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "number"] }
    static var placeholder: Double { 0 }
}
extension Float: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "number"] }
    static var placeholder: Float { 0 }
}
extension UUID: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "string", "format": "uuid"] }
    static var placeholder: UUID { UUID() }
}
extension Date: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "string", "format": "date-time"] }
    static var placeholder: Date { Date(timeIntervalSince1970: 0) }
}
extension Data: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "string", "contentEncoding": "base64"] }
    static var placeholder: Data { Data() }
}
extension JSONValue: DocumentedScalar {
    /// Any JSON value.
    static var scalarSchema: DocumentValue { [:] }
    static var placeholder: JSONValue { .null }
}

/// Arrays and string-keyed dictionaries: their schema is their element's.
private protocol DocumentedCollection {
    static func schema(_ recorder: SchemaRecorder) throws -> DocumentValue
    static var empty: Any { get }
}

extension Array: DocumentedCollection where Element: Decodable {
    fileprivate static func schema(_ recorder: SchemaRecorder) throws -> DocumentValue {
        ["type": "array", "items": try recorder.schema(Element.self)]
    }
    fileprivate static var empty: Any { [Element]() }
}

extension Dictionary: DocumentedCollection where Key == String, Value: Decodable {
    fileprivate static func schema(_ recorder: SchemaRecorder) throws -> DocumentValue {
        ["type": "object", "additionalProperties": try recorder.schema(Value.self)]
    }
    fileprivate static var empty: Any { [String: Value]() }
}

private protocol DocumentedOptional {
    static var wrapped: any Decodable.Type { get }
}

extension Optional: DocumentedOptional where Wrapped: Decodable {
    fileprivate static var wrapped: any Decodable.Type { Wrapped.self }
}

private func members(_ value: DocumentValue) -> [(String, DocumentValue)] {
    guard case .object(let members) = value else { return [] }
    return members
}

private func elements(_ value: DocumentValue) -> [DocumentValue] {
    guard case .array(let elements) = value else { return [] }
    return elements
}

/// Why the document could not be generated: a mistake in a declaration, caught by the document's test.
struct DocumentError: Error, CustomStringConvertible {
    let description: String
}

/// Reads the JSON Schema of `Decodable` types by decoding them from a decoder that answers every request with a
/// placeholder and writes down what was asked: `decode` is a required field, `decodeIfPresent` an optional one, and the
/// type asked for is the field's schema. Named types (`DocumentedSchema`) become `components/schemas` entries referred to
/// by `$ref`, in the order first met.
final class SchemaRecorder {
    private(set) var components: [(String, DocumentValue)] = []
    private var known: [String: ObjectIdentifier] = [:]

    /// The schema of `type`: inline for scalars, collections and unnamed types, a reference for a named one.
    func schema(_ type: Any.Type) throws -> DocumentValue {
        if let scalar = type as? any DocumentedScalar.Type { return scalar.scalarSchema }
        if let collection = type as? any DocumentedCollection.Type { return try collection.schema(self) }
        if let optional = type as? any DocumentedOptional.Type { return try schema(optional.wrapped) }
        guard let named = type as? any DocumentedSchema.Type else { return try object(type) }
        let name = named.schemaName
        if let owner = known[name] {
            guard owner == ObjectIdentifier(type) else { throw DocumentError(description: "two types are named \(name) in the document") }
        } else {
            known[name] = ObjectIdentifier(type)
            let slot = components.count
            components.append((name, .null))
            var read = try object(type)
            for (field, schema) in named.encodedOnly {
                read["properties"] = .object([(field, schema)] + (read["properties"].map(members) ?? []))
                read["required"] = .array([.string(field)] + (read["required"].map(elements) ?? []))
            }
            components[slot].1 = try annotated(named, read)
        }
        return ["$ref": .string("#/components/schemas/" + name)]
    }

    private func object(_ type: Any.Type) throws -> DocumentValue {
        if let enumeration = enumeration(type) { return enumeration.schema }
        if let union = type as? any DocumentedUnion.Type {
            var mapping: [(String, DocumentValue)] = []
            var alternatives: [DocumentValue] = []
            for (value, alternative) in union.alternatives {
                let reference = try schema(alternative)
                alternatives.append(reference)
                mapping.append((value, reference["$ref"] ?? .null))
            }
            return ["oneOf": .array(alternatives), "discriminator": ["propertyName": .string(union.discriminator), "mapping": .object(mapping)]]
        }
        guard let type = type as? any Decodable.Type else { throw DocumentError(description: "\(type) is neither Decodable nor a union") }
        let recording = Recording()
        do {
            _ = try type.init(from: RecordingDecoder(recorder: self, recording: recording))
        } catch let error as DocumentError {
            throw error
        } catch {
            throw DocumentError(description: "\(type)'s decoder refused the placeholders it was given: \(error)")
        }
        return recording.schema
    }

    private func annotated(_ type: any DocumentedSchema.Type, _ schema: DocumentValue) throws -> DocumentValue {
        var schema = schema
        for (field, note) in type.schemaNotes.sorted(by: { $0.key < $1.key }) {
            if field.isEmpty {
                schema = schema.merging(note)
                continue
            }
            guard var property = schema["properties"]?[field] else {
                throw DocumentError(description: "\(type) notes a field \(field) it does not have")
            }
            // A note that says what the field is (a type, a reference, alternatives) says all of it.
            if note["type"] != nil || note["$ref"] != nil || note["oneOf"] != nil {
                for keyword in ["type", "$ref", "oneOf", "items", "format", "enum", "const", "properties", "required", "additionalProperties"] {
                    property[keyword] = nil
                }
            }
            schema["properties"]?[field] = property.merging(note)
        }
        return schema
    }

    /// A value of `type` to return to the decoder that asked for it.
    fileprivate func placeholder<T: Decodable>(_ type: T.Type) throws -> T {
        if let scalar = type as? any DocumentedScalar.Type { return scalar.placeholder as! T }
        if let collection = type as? any DocumentedCollection.Type { return collection.empty as! T }
        if let enumeration = enumeration(type) { return enumeration.first as! T }
        return try T(from: RecordingDecoder(recorder: self, recording: Recording()))
    }
}

/// What one decoding asked for: an object's fields, or the one value of a single-value or unkeyed container.
private final class Recording {
    var properties: [(String, DocumentValue)] = []
    var required: [String] = []
    var asked: Set<String> = []
    var single: DocumentValue?
    var items: DocumentValue?

    var schema: DocumentValue {
        if let single { return single }
        if let items { return ["type": "array", "items": items] }
        var schema: DocumentValue = ["type": "object"]
        if !required.isEmpty { schema["required"] = .array(required.map { .string($0) }) }
        schema["properties"] = .object(properties)
        return schema
    }

    func field(_ key: String, _ schema: DocumentValue, required isRequired: Bool) {
        guard !properties.contains(where: { $0.0 == key }) else { return }
        properties.append((key, schema))
        // A field the decoder checked for first (`contains`) is optional, whatever it then called.
        if isRequired, !asked.contains(key) { required.append(key) }
    }
}

private struct RecordingDecoder: Decoder {
    let recorder: SchemaRecorder
    let recording: Recording
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedRecorder<Key>(recorder: recorder, recording: recording))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { UnkeyedRecorder(recorder: recorder, recording: recording) }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleRecorder(recorder: recorder, recording: recording) }
}

private struct KeyedRecorder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let recorder: SchemaRecorder
    let recording: Recording
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool {
        recording.asked.insert(key.stringValue)
        return true
    }

    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        recording.field(key.stringValue, try recorder.schema(type), required: true)
        return try recorder.placeholder(type)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        recording.field(key.stringValue, try recorder.schema(type), required: false)
        return nil
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(Bool.self, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try scalar(String.self, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try scalar(Double.self, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try scalar(Float.self, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try scalar(Int.self, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try scalar(Int8.self, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try scalar(Int16.self, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try scalar(Int32.self, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try scalar(Int64.self, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try scalar(UInt.self, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try scalar(UInt8.self, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try scalar(UInt16.self, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try scalar(UInt32.self, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try scalar(UInt64.self, key) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(Bool.self, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(String.self, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(Double.self, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(Float.self, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(Int.self, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(Int8.self, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(Int16.self, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(Int32.self, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(Int64.self, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(UInt.self, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(UInt8.self, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(UInt16.self, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(UInt32.self, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(UInt64.self, key) }

    private func scalar<T: DocumentedScalar>(_ type: T.Type, _ key: Key) throws -> T {
        recording.field(key.stringValue, T.scalarSchema, required: true)
        return T.placeholder
    }

    private func optional<T: DocumentedScalar>(_ type: T.Type, _ key: Key) throws -> T? {
        recording.field(key.stringValue, T.scalarSchema, required: false)
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw DocumentError(description: "a nested container (field \(key.stringValue)) cannot be documented; decode a type instead")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DocumentError(description: "a nested container (field \(key.stringValue)) cannot be documented; decode a type instead")
    }

    func superDecoder() throws -> any Decoder { RecordingDecoder(recorder: recorder, recording: recording) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RecordingDecoder(recorder: recorder, recording: recording) }
}

private struct SingleRecorder: SingleValueDecodingContainer {
    let recorder: SchemaRecorder
    let recording: Recording
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if recording.single == nil { recording.single = try recorder.schema(type) }
        return try recorder.placeholder(type)
    }

    func decode(_ type: Bool.Type) throws -> Bool { try decodeScalar(Bool.self) }
    func decode(_ type: String.Type) throws -> String { try decodeScalar(String.self) }
    func decode(_ type: Double.Type) throws -> Double { try decodeScalar(Double.self) }
    func decode(_ type: Float.Type) throws -> Float { try decodeScalar(Float.self) }
    func decode(_ type: Int.Type) throws -> Int { try decodeScalar(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeScalar(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeScalar(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeScalar(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeScalar(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeScalar(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeScalar(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeScalar(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeScalar(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeScalar(UInt64.self) }

    private func decodeScalar<T: DocumentedScalar>(_ type: T.Type) throws -> T {
        if recording.single == nil { recording.single = T.scalarSchema }
        return T.placeholder
    }
}

private struct UnkeyedRecorder: UnkeyedDecodingContainer {
    let recorder: SchemaRecorder
    let recording: Recording
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try element(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try element(Bool.self) }
    mutating func decode(_ type: String.Type) throws -> String { try element(String.self) }
    mutating func decode(_ type: Double.Type) throws -> Double { try element(Double.self) }
    mutating func decode(_ type: Float.Type) throws -> Float { try element(Float.self) }
    mutating func decode(_ type: Int.Type) throws -> Int { try element(Int.self) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try element(Int8.self) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try element(Int16.self) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try element(Int32.self) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try element(Int64.self) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try element(UInt.self) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try element(UInt8.self) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try element(UInt16.self) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try element(UInt32.self) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try element(UInt64.self) }

    private func element<T: Decodable>(_ type: T.Type) throws -> T {
        if recording.items == nil { recording.items = try recorder.schema(type) }
        return try recorder.placeholder(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        throw DocumentError(description: "a nested container cannot be documented; decode a type instead")
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DocumentError(description: "a nested container cannot be documented; decode a type instead")
    }

    mutating func superDecoder() throws -> any Decoder { RecordingDecoder(recorder: recorder, recording: recording) }
}
