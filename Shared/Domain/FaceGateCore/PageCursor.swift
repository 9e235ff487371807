import Crypto
import FaceGateContracts
import Foundation

/// Opaque cursor for keyset pagination: base64url of `<unix micros>:<uuid>`.
package struct PageCursor: Sendable {
    package var time: Date
    package var id: UUID

    package init(time: Date, id: UUID) {
        self.time = time
        self.id = id
    }

    package var encoded: String {
        Base64URL.encode(Array("\(Int64((time.timeIntervalSince1970 * 1_000_000).rounded())):\(id.uuidString.lowercased())".utf8))
    }

    package static func decode(_ text: String?) throws -> PageCursor? {
        guard let text, !text.isEmpty else { return nil }
        guard let bytes = Base64URL.decode(text), let plain = String(bytes: bytes, encoding: .utf8),
              let colon = plain.firstIndex(of: ":"), let micros = Int64(plain[..<colon]),
              let id = UUID(uuidString: String(plain[plain.index(after: colon)...])) else {
            throw APIError(.invalidRequest, "cursor is not one this API issued")
        }
        return PageCursor(time: Date(timeIntervalSince1970: Double(micros) / 1_000_000), id: id)
    }

    /// A page read with `limit + 1` rows, cut to `limit`, with the cursor of the next page when there is one.
    package static func page<Row>(_ rows: [Row], limit: Int, position: (Row) -> PageCursor) -> (items: [Row], next: String?) {
        guard rows.count > limit else { return (rows, nil) }
        let items = Array(rows.prefix(limit))
        return (items, position(items[items.count - 1]).encoded)
    }
}
