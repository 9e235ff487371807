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
    /// Addresses counted at once; past it every new address is counted in one shared summary (`*`), without a row of its own.
    static let maxAddresses = 10_000

    /// The address a refusal is counted under: an IPv6 address by its /64, which one client is commonly given whole.
    static func countedAddress(_ address: String) -> String {
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        withUnsafeMutableBytes(of: &v6) { bytes in for index in 8..<16 { bytes[index] = 0 } }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &text, socklen_t(INET6_ADDRSTRLEN)) != nil else { return address }
        return String(cString: text) + "/64"
    }

    /// `period` seconds; 0 records every refusal as a row of its own.
    init(period: Int) { self.period = period }

    /// True when this refusal is the first of its address and period (record it); false when it was counted.
    func isFirst(address: String, code: String, route: String, now: Date = Date()) -> Bool {
        guard period > 0 else { return true }
        let number = Int64(now.timeIntervalSince1970) / Int64(period)
        var key = Key(address: Self.countedAddress(address), period: number)
        return counted.withLock { counted in
            if counted[key] == nil, counted.count >= Self.maxAddresses { key.address = "*" }
            guard var summary = counted[key] else {
                counted[key] = Summary(address: key.address, periodStart: Date(timeIntervalSince1970: Double(number * Int64(period))), count: 0,
                                       codes: [:], routes: [:])
                // The shared overflow summary counts from its first refusal: no row of its own.
                guard key.address == "*" else { return true }
                counted[key]?.count = 1
                counted[key]?.codes[code] = 1
                counted[key]?.routes[route] = 1
                return false
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
