import Foundation
import Synchronization

/// The time the stores' in-memory twins read; a test moves it instead of sleeping.
package final class TwinClock: Sendable {
    private let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    package init() {}
    package var now: Date { time.withLock { $0 } }
    package func advance(seconds: Double) { time.withLock { $0 += seconds } }
}

/// A fake store's answer to a second row with the same primary key, as PostgreSQL refuses it.
package struct DuplicateKey: Error {
    package var key: String
    package init(key: String) { self.key = key }
}
