import Foundation
import Synchronization

/// Refusals of calls that carry no valid credential, recorded without letting anyone flood the audit trail: per client
/// address and period (`FACEGATE_REFUSAL_SUMMARY_SECONDS`, a minute), the first refusal is a chained row of its own;
/// the others are only counted, and written as one summary row once the period is over (`summaries`). Each gateway
/// counts for itself; a gateway that stops loses at most the count of its current period.
final class RefusalLedger: Sendable {
    struct Summary: Sendable, Equatable {
        var address: String
        var periodStart: Date
        var count: Int
        /// Codes and routes of the counted refusals, with their counts.
        var codes: [String: Int]
        var routes: [String: Int]
    }

    private struct Key: Hashable {
        var address: String
        var period: Int64
    }

    private let period: Int
    private let counted = Mutex<[Key: Summary]>([:])
    /// Addresses counted at once; past it a refusal of a new address is counted in no summary (the first of each period
    /// still gets its row).
    static let maxAddresses = 10_000

    /// `period` seconds; 0 records every refusal as a row of its own.
    init(period: Int) { self.period = period }

    /// True when this refusal is the first of its address and period (record it); false when it was counted.
    func isFirst(address: String, code: String, route: String, now: Date = Date()) -> Bool {
        guard period > 0 else { return true }
        let key = Key(address: address, period: Int64(now.timeIntervalSince1970) / Int64(period))
        return counted.withLock { counted in
            guard var summary = counted[key] else {
                if counted.count < Self.maxAddresses {
                    counted[key] = Summary(address: address, periodStart: Date(timeIntervalSince1970: Double(key.period * Int64(period))), count: 0,
                                           codes: [:], routes: [:])
                }
                return true
            }
            summary.count += 1
            summary.codes[code, default: 0] += 1
            summary.routes[route, default: 0] += 1
            counted[key] = summary
            return false
        }
    }

    /// Takes the counts of the periods that are over (all of them with `all`): those that counted something are summaries.
    func summaries(now: Date = Date(), all: Bool = false) -> [Summary] {
        guard period > 0 else { return [] }
        let current = Int64(now.timeIntervalSince1970) / Int64(period)
        return counted.withLock { counted in
            let over = counted.filter { all || $0.key.period < current }
            for key in over.keys { counted[key] = nil }
            return over.values.filter { $0.count > 0 }.sorted { ($0.periodStart, $0.address) < ($1.periodStart, $1.address) }
        }
    }
}
