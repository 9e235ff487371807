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
