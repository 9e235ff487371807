import Foundation

/// The one JSON dialect FaceGate speaks on the wire and on Kafka: camelCase keys,
/// RFC 3339 UTC timestamps with milliseconds, binary data as standard base64.
public enum FaceGateJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        encoder.dataEncodingStrategy = .base64
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = RFC3339.date(from: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected an RFC 3339 timestamp, got \(text)")
            }
            return date
        }
        decoder.dataDecodingStrategy = .base64
        return decoder
    }

    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder().encode(value))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decoder().decode(type, from: Data(bytes))
    }
}

/// RFC 3339 timestamps in UTC with millisecond precision, e.g. `2026-12-02T11:25:09.123Z`.
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true)
            .timeSeparator(.colon).timeZone(separator: .omitted))
    }

    public static func date(from text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601.year().month().day().dateSeparator(.dash)
            .time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(separator: .omitted)) {
            return date
        }
        return try? Date(text, strategy: .iso8601)
    }
}

extension UUID {
    /// The form FaceGate puts on the wire and in tokens: lowercase, as RFC 9562 recommends.
    public var wire: String { uuidString.lowercased() }
}

extension Array where Element == UUID {
    /// The ids as the text of a PostgreSQL array literal (`{a,b}`): bind it and cast it with `::uuid[]`.
    public var arrayLiteral: String { "{" + map(\.wire).joined(separator: ",") + "}" }
}
