import Foundation
import ServiceKit

/// The proxies whose `X-Forwarded-For` names the client (`FACEGATE_TRUSTED_PROXIES`): addresses and CIDR ranges, IPv4 and
/// IPv6 (`10.0.0.5`, `10.244.0.0/16`, `fd00::/8`). A range is what a cluster needs: an ingress controller's pods take any
/// address of the pod network.
struct TrustedProxies: Sendable, Equatable {
    private struct Range: Sendable, Equatable {
        var network: [UInt8]
        var prefix: Int
    }

    private let ranges: [Range]

    /// Throws on an entry that is neither an address nor a range, naming it.
    init(_ list: String) throws(ConfigurationError) {
        var ranges: [Range] = []
        for entry in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bytes = Self.bytes(parts[0]) else {
                throw ConfigurationError(variable: "FACEGATE_TRUSTED_PROXIES", problem: "'\(entry)' is not an address or a range")
            }
            guard let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8, (0...bytes.count * 8).contains(prefix) else {
                throw ConfigurationError(variable: "FACEGATE_TRUSTED_PROXIES", problem: "'\(entry)' has no valid prefix length")
            }
            ranges.append(Range(network: bytes, prefix: prefix))
        }
        self.ranges = ranges
    }

    var isEmpty: Bool { ranges.isEmpty }

    func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(address) else { return false }
        return ranges.contains { range in
            guard range.network.count == bytes.count else { return false }
            let (whole, rest) = range.prefix.quotientAndRemainder(dividingBy: 8)
            guard bytes.prefix(whole) == range.network.prefix(whole) else { return false }
            guard rest > 0 else { return true }
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - rest))
            return bytes[whole] & mask == range.network[whole] & mask
        }
    }

    /// An address's bytes (4 or 16); an IPv4-mapped IPv6 address (`::ffff:10.0.0.5`) counts as its IPv4 address.
    private static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(bytes.suffix(4)) : bytes
    }
}
