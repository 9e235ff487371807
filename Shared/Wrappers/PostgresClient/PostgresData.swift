import Foundation

/// A PostgreSQL type, by its OID.
public struct PostgresDataType: Sendable, Hashable, CustomStringConvertible {
    public var oid: UInt32
    public init(oid: UInt32) { self.oid = oid }

    public static let bool = Self(oid: 16)
    public static let bytea = Self(oid: 17)
    public static let char = Self(oid: 18)
    public static let name = Self(oid: 19)
    public static let int8 = Self(oid: 20)
    public static let int2 = Self(oid: 21)
    public static let int4 = Self(oid: 23)
    public static let text = Self(oid: 25)
    public static let json = Self(oid: 114)
    public static let xml = Self(oid: 142)
    public static let float4 = Self(oid: 700)
    public static let float8 = Self(oid: 701)
    public static let unknown = Self(oid: 705)
    public static let bpchar = Self(oid: 1042)
    public static let varchar = Self(oid: 1043)
    public static let date = Self(oid: 1082)
    public static let timestamp = Self(oid: 1114)
    public static let timestamptz = Self(oid: 1184)
    public static let numeric = Self(oid: 1700)
    public static let uuid = Self(oid: 2950)
    public static let jsonb = Self(oid: 3802)

    private static let names: [UInt32: String] = [
        16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 23: "int4", 25: "text",
        114: "json", 142: "xml", 700: "float4", 701: "float8", 705: "unknown", 1042: "bpchar",
        1043: "varchar", 1082: "date", 1114: "timestamp", 1184: "timestamptz", 1700: "numeric",
        2950: "uuid", 3802: "jsonb",
    ]
    public var description: String { Self.names[oid] ?? "oid \(oid)" }
}

/// One column value of a result row, in PostgreSQL's binary format.
public struct PostgresCell {
    public let type: PostgresDataType
    public let columnName: String
    /// The value's bytes, nil for SQL NULL. They belong to the result and are valid only during `decode(from:)`.
    public let bytes: UnsafeRawBufferPointer?

    /// The bytes of a non-NULL value, or an error saying the column is NULL.
    public func nonNullBytes<T>(as type: T.Type) throws(PostgresError) -> UnsafeRawBufferPointer {
        guard let bytes else {
            throw PostgresError(
                kind: .decoding, message: "column '\(columnName)' is NULL; decode it as \(T.self)? to accept NULL")
        }
        return bytes
    }

    public func typeMismatch<T>(_ type: T.Type) -> PostgresError {
        PostgresError(
            kind: .decoding,
            message: "column '\(columnName)' of type \(self.type) (\(bytes?.count ?? 0) bytes) cannot be decoded as \(T.self)")
    }
}

/// A Swift value that can be sent as a query parameter in PostgreSQL's binary format.
public protocol PostgresEncodable {
    static var postgresType: PostgresDataType { get }
    /// Appends the binary representation (no length prefix).
    func encode(into buffer: inout [UInt8])
}

/// A Swift value that can be read from a result column in PostgreSQL's binary format.
public protocol PostgresDecodable {
    static func decode(from cell: PostgresCell) throws(PostgresError) -> Self
}

public typealias PostgresCodable = PostgresEncodable & PostgresDecodable

// Enums and other wrappers get both directions by declaring the conformance.
extension PostgresEncodable where Self: RawRepresentable, RawValue: PostgresEncodable {
    public static var postgresType: PostgresDataType { RawValue.postgresType }
    public func encode(into buffer: inout [UInt8]) { rawValue.encode(into: &buffer) }
}

extension PostgresDecodable where Self: RawRepresentable, RawValue: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Self {
        guard let value = Self(rawValue: try RawValue.decode(from: cell)) else {
            throw PostgresError(kind: .decoding, message: "column '\(cell.columnName)' holds no valid \(Self.self)")
        }
        return value
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Self {
        cell.bytes == nil ? nil : try Wrapped.decode(from: cell)
    }
}

// MARK: - Binary helpers

extension Array where Element == UInt8 {
    @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always)
    func bigEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int = 0) -> T {
        T(bigEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

// MARK: - Integers

extension PostgresCell {
    /// Any integer column (or an integral numeric) whose value fits `T`.
    func integer<T: FixedWidthInteger>(as type: T.Type) throws(PostgresError) -> T {
        let bytes = try nonNullBytes(as: T.self)
        let wide: Int64
        switch (self.type, bytes.count) {
        case (.int2, 2): wide = Int64(bytes.bigEndian(Int16.self))
        case (.int4, 4): wide = Int64(bytes.bigEndian(Int32.self))
        case (.int8, 8): wide = bytes.bigEndian(Int64.self)
        case (.numeric, _):
            guard let value = NumericValue(bytes)?.integer else { throw typeMismatch(T.self) }
            wide = value
        default: throw typeMismatch(T.self)
        }
        guard let value = T(exactly: wide) else {
            throw PostgresError(kind: .decoding, message: "column '\(columnName)' value does not fit in \(T.self)")
        }
        return value
    }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int8 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendBigEndian(Int64(self)) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int { try cell.integer(as: Int.self) }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int8 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendBigEndian(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int64 { try cell.integer(as: Int64.self) }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int4 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendBigEndian(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int32 { try cell.integer(as: Int32.self) }
}

extension Int16: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .int2 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendBigEndian(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Int16 { try cell.integer(as: Int16.self) }
}

// MARK: - Floating point

extension Double: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .float8 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendBigEndian(bitPattern) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Double {
        let bytes = try cell.nonNullBytes(as: Double.self)
        switch (cell.type, bytes.count) {
        case (.float8, 8): return Double(bitPattern: bytes.bigEndian(UInt64.self))
        case (.float4, 4): return Double(Float(bitPattern: bytes.bigEndian(UInt32.self)))
        case (.numeric, _):
            guard let value = NumericValue(bytes)?.double else { throw cell.typeMismatch(Double.self) }
            return value
        default: throw cell.typeMismatch(Double.self)
        }
    }
}

extension Float: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .float4 }
    public func encode(into buffer: inout [UInt8]) { buffer.appendBigEndian(bitPattern) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Float {
        let bytes = try cell.nonNullBytes(as: Float.self)
        switch (cell.type, bytes.count) {
        case (.float4, 4): return Float(bitPattern: bytes.bigEndian(UInt32.self))
        case (.float8, 8): return Float(Double(bitPattern: bytes.bigEndian(UInt64.self)))
        default: throw cell.typeMismatch(Float.self)
        }
    }
}

/// PostgreSQL's binary `numeric`: base-10000 digits with a weight; decoded only as far as Int64 and Double go.
struct NumericValue {
    var digits: [Int16] = []
    var weight: Int
    var negative: Bool
    var isNaN = false

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 8 else { return nil }
        let count = Int(bytes.bigEndian(Int16.self))
        weight = Int(bytes.bigEndian(Int16.self, at: 2))
        let sign = bytes.bigEndian(UInt16.self, at: 4)
        guard bytes.count == 8 + 2 * count else { return nil }
        switch sign {
        case 0x0000: negative = false
        case 0x4000: negative = true
        case 0xC000: negative = false; isNaN = true
        default: return nil  // infinities
        }
        digits = (0..<count).map { bytes.bigEndian(Int16.self, at: 8 + 2 * $0) }
    }

    var integer: Int64? {
        guard !isNaN else { return nil }
        var value: Int64 = 0
        for (index, digit) in digits.enumerated() {
            let power = weight - index
            if power < 0 {
                if digit != 0 { return nil }
                continue
            }
            var term = Int64(digit)
            for _ in 0..<power {
                let (product, overflow) = term.multipliedReportingOverflow(by: 10_000)
                if overflow { return nil }
                term = product
            }
            let (sum, overflow) = value.addingReportingOverflow(term)
            if overflow { return nil }
            value = sum
        }
        return negative ? -value : value
    }

    var double: Double {
        guard !isNaN else { return .nan }
        var value = 0.0
        for (index, digit) in digits.enumerated() {
            value += Double(digit) * pow(10_000.0, Double(weight - index))
        }
        return negative ? -value : value
    }
}

// MARK: - Text, bool, bytes

extension String: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .text }
    public func encode(into buffer: inout [UInt8]) { buffer.append(contentsOf: utf8) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> String {
        var bytes = try cell.nonNullBytes(as: String.self)
        switch cell.type {
        case .text, .varchar, .bpchar, .name, .json, .xml, .unknown, .char: break
        case .jsonb:
            guard bytes.first == 1 else { throw cell.typeMismatch(String.self) }
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        default: throw cell.typeMismatch(String.self)
        }
        return String(decoding: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .bool }
    public func encode(into buffer: inout [UInt8]) { buffer.append(self ? 1 : 0) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Bool {
        let bytes = try cell.nonNullBytes(as: Bool.self)
        guard cell.type == .bool, bytes.count == 1 else { throw cell.typeMismatch(Bool.self) }
        return bytes[0] != 0
    }
}

extension Array: PostgresEncodable where Element == UInt8 {
    public static var postgresType: PostgresDataType { .bytea }
    public func encode(into buffer: inout [UInt8]) { buffer.append(contentsOf: self) }
}

extension Array: PostgresDecodable where Element == UInt8 {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> [UInt8] {
        let bytes = try cell.nonNullBytes(as: [UInt8].self)
        guard cell.type == .bytea else { throw cell.typeMismatch([UInt8].self) }
        return [UInt8](unsafeUninitializedCapacity: bytes.count) { storage, count in
            if let base = bytes.baseAddress { storage.baseAddress!.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
            count = bytes.count
        }
    }
}

extension Data: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .bytea }
    public func encode(into buffer: inout [UInt8]) { buffer.append(contentsOf: self) }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Data {
        let bytes = try cell.nonNullBytes(as: Data.self)
        guard cell.type == .bytea else { throw cell.typeMismatch(Data.self) }
        return Data(bytes)
    }
}

// MARK: - UUID, Date

extension UUID: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresDataType { .uuid }
    public func encode(into buffer: inout [UInt8]) { Swift.withUnsafeBytes(of: uuid) { buffer.append(contentsOf: $0) } }
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> UUID {
        let bytes = try cell.nonNullBytes(as: UUID.self)
        guard cell.type == .uuid, bytes.count == 16 else { throw cell.typeMismatch(UUID.self) }
        return UUID(uuid: bytes.loadUnaligned(as: uuid_t.self))
    }
}

extension Date: PostgresEncodable, PostgresDecodable {
    /// Microseconds from PostgreSQL's epoch (2000-01-01) to Foundation's reference date (2001-01-01).
    static let postgresEpochOffsetMicros: Int64 = 366 * 86_400 * 1_000_000

    public static var postgresType: PostgresDataType { .timestamptz }

    /// Microseconds since 2000-01-01 UTC, rounded to the nearest microsecond (the column's precision).
    public func encode(into buffer: inout [UInt8]) {
        let micros = Int64((timeIntervalSinceReferenceDate * 1_000_000).rounded())
        buffer.appendBigEndian(micros + Self.postgresEpochOffsetMicros)
    }

    /// Reads `timestamptz`, `timestamp` (taken as UTC) and `date` (midnight UTC); infinities become distant dates.
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Date {
        let bytes = try cell.nonNullBytes(as: Date.self)
        switch (cell.type, bytes.count) {
        case (.timestamptz, 8), (.timestamp, 8):
            let micros = bytes.bigEndian(Int64.self)
            if micros == .max { return .distantFuture }
            if micros == .min { return .distantPast }
            return Date(timeIntervalSinceReferenceDate: Double(micros - postgresEpochOffsetMicros) / 1_000_000)
        case (.date, 4):
            let days = bytes.bigEndian(Int32.self)
            if days == .max { return .distantFuture }
            if days == .min { return .distantPast }
            return Date(timeIntervalSinceReferenceDate: Double(Int64(days) * 86_400_000_000 - postgresEpochOffsetMicros) / 1_000_000)
        default: throw cell.typeMismatch(Date.self)
        }
    }
}
