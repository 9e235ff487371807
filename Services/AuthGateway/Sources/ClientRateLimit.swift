import Foundation
import Synchronization

/// A per-client-address token bucket: `rate` requests a second on average, `burst` at once. It stands in front of
/// every public route, so one address cannot flood the gateway, the audit trail (refused credentials are recorded)
/// or the matchers. Each gateway replica counts for itself; the per-subject attempt limits of face login
/// (`AttemptGuard`, in PostgreSQL) are unaffected by it.
final class ClientRateLimit: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let rate: Double
    private let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])

    /// `rate` 0 admits everything.
    init(rate: Int, burst: Int) {
        self.rate = Double(rate)
        self.burst = Double(max(burst, 1))
    }

    /// Takes a token for `client`; false when its bucket is empty.
    func admit(_ client: String, now: ContinuousClock.Instant = .now) -> Bool {
        guard rate > 0 else { return true }
        return buckets.withLock { buckets in
            // Full buckets carry no state: drop them now and then, so the table holds only recent clients.
            if buckets.count > 10_000 {
                buckets = buckets.filter { (now - $0.value.updated).seconds * rate + $0.value.tokens < burst }
            }
            var bucket = buckets[client] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated).seconds * rate)
            bucket.updated = now
            let admitted = bucket.tokens >= 1
            if admitted { bucket.tokens -= 1 }
            buckets[client] = bucket
            return admitted
        }
    }
}

/// Open kiosk event streams (Server-Sent Events): each holds a connection and polls PostgreSQL, so their number is
/// capped per gateway (`FACEGATE_EVENT_STREAMS`) and per client address (`FACEGATE_EVENT_STREAMS_PER_CLIENT`).
/// A stream holds its `Slot` and gives it back when the response is done with it.
final class EventStreamSlots: Sendable {
    final class Slot: Sendable {
        private let release: @Sendable () -> Void
        init(release: @escaping @Sendable () -> Void) { self.release = release }
        deinit { release() }
    }

    private struct Counts {
        var total = 0
        var byClient: [String: Int] = [:]
    }

    private let limit: Int
    private let perClient: Int
    private let counts = Mutex(Counts())

    init(limit: Int, perClient: Int) {
        self.limit = limit
        self.perClient = perClient
    }

    var open: Int { counts.withLock { $0.total } }

    /// A slot for one more stream from `client`, or the refusal: 429 over the client's share, 503 over the gateway's.
    func take(for client: String) throws -> Slot {
        try counts.withLock { counts in
            if counts.byClient[client, default: 0] >= perClient {
                throw APIError(.rateLimited, "this client already has \(perClient) event streams open; close one first", retryAfter: 5)
            }
            if counts.total >= limit {
                throw APIError(.serviceUnavailable, "this gateway has \(limit) event streams open; try again shortly", retryAfter: 5)
            }
            counts.total += 1
            counts.byClient[client, default: 0] += 1
        }
        return Slot { [self] in
            self.counts.withLock { counts in
                counts.total -= 1
                counts.byClient[client, default: 1] -= 1
                if counts.byClient[client] == 0 { counts.byClient[client] = nil }
            }
        }
    }
}
