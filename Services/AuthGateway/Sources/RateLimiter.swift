import FaceGateCore
import Foundation
import Synchronization

/// Token buckets by key: `rate` requests a second on average, `burst` at once. Per client address it stands in front of
/// every public route, so one address cannot flood the gateway, the audit trail (refused credentials are recorded) or
/// the matchers; per server credential it limits operators and app servers; per kiosk, kiosk logins. Each gateway
/// replica counts for itself; the per-subject attempt limits (`AttemptGuard`, in PostgreSQL) are unaffected by it.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let rate: Double
    private let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])

    /// `rate` 0 admits everything.
    init(rate: Double, burst: Int) {
        self.rate = rate
        self.burst = Double(max(burst, 1))
    }

    /// Takes a token for `key`; false when its bucket is empty.
    func admit(_ key: String, now: ContinuousClock.Instant = .now) -> Bool {
        guard rate > 0 else { return true }
        return buckets.withLock { buckets in
            // Full buckets carry no state: drop them now and then, so the table holds only recent clients.
            if buckets.count > 10_000 {
                buckets = buckets.filter { (now - $0.value.updated).seconds * rate + $0.value.tokens < burst }
            }
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated).seconds * rate)
            bucket.updated = now
            let admitted = bucket.tokens >= 1
            if admitted { bucket.tokens -= 1 }
            buckets[key] = bucket
            return admitted
        }
    }

    /// Seconds until `key` has a token again (at least 1).
    func retryAfter(_ key: String, now: ContinuousClock.Instant = .now) -> Int {
        guard rate > 0 else { return 1 }
        let tokens = buckets.withLock { $0[key].map { min(burst, $0.tokens + (now - $0.updated).seconds * rate) } } ?? burst
        return max(1, Int(((1 - tokens) / rate).rounded(.up)))
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
