internal import CPostgres

/// Owns one libpq result. A finished result is never mutated again and libpq's accessors only read
/// it, so rows on any thread may share it.
final class ResultHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { PQclear(pointer) }
}

/// Column names and types of a result; built once and shared by every row of a stream.
final class ResultColumns: Sendable {
    let names: [String]
    let types: [PostgresDataType]
    let indexByName: [String: Int]

    init(_ result: OpaquePointer) {
        let count = Int(PQnfields(result))
        names = (0..<count).map { String(cString: PQfname(result, Int32($0))) }
        types = (0..<count).map { PostgresDataType(oid: PQftype(result, Int32($0))) }
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        indexByName = index
    }
}

/// One result row. Values are decoded on demand straight from the received binary data.
public struct PostgresRow: Sendable {
    let result: ResultHandle
    let columns: ResultColumns
    let rowIndex: Int32

    public var columnNames: [String] { columns.names }

    /// Decodes the named column; when two columns share a name, the first wins. `Optional<T>` turns NULL into nil.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let index = columns.indexByName[column] else {
            throw PostgresError(
                kind: .decoding,
                message: "no column '\(column)' in the result (columns: \(columns.names.joined(separator: ", ")))")
        }
        return try decodeColumn(index, as: T.self)
    }

    /// Decodes the column at a zero-based position.
    public func decode<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard columns.names.indices.contains(index) else {
            throw PostgresError(
                kind: .decoding, message: "column index \(index) is out of range; the result has \(columns.names.count) columns")
        }
        return try decodeColumn(index, as: T.self)
    }

    private func decodeColumn<T: PostgresDecodable>(_ index: Int, as type: T.Type) throws(PostgresError) -> T {
        let column = Int32(index)
        let bytes: UnsafeRawBufferPointer? =
            PQgetisnull(result.pointer, rowIndex, column) == 1
            ? nil
            : UnsafeRawBufferPointer(
                start: PQgetvalue(result.pointer, rowIndex, column),
                count: Int(PQgetlength(result.pointer, rowIndex, column)))
        let cell = PostgresCell(type: columns.types[index], columnName: columns.names[index], bytes: bytes)
        return try T.decode(from: cell)
    }
}

/// A fully received result.
public struct PostgresRows: Sequence, Sendable {
    public var rows: [PostgresRow]
    /// Rows inserted, updated, deleted, selected, … as the server's command tag reports them; 0 when it reports none.
    public var affectedRows: Int
    /// The server's command tag, e.g. `INSERT 0 1` or `COMMIT`.
    public var commandTag: String
    public var columnNames: [String]

    public var first: PostgresRow? { rows.first }
    public var count: Int { rows.count }
    public func makeIterator() -> IndexingIterator<[PostgresRow]> { rows.makeIterator() }

    init(_ result: ResultHandle) {
        let columns = ResultColumns(result.pointer)
        let count = PQntuples(result.pointer)
        rows = (0..<count).map { PostgresRow(result: result, columns: columns, rowIndex: $0) }
        commandTag = String(cString: PQcmdStatus(result.pointer))
        affectedRows = Int(String(cString: PQcmdTuples(result.pointer))) ?? 0
        columnNames = columns.names
    }
}
