@testable import AuthGateway
import ServiceKit
import Testing

/// `FACEGATE_TRUSTED_PROXIES`: addresses and CIDR ranges of either family, nothing else.
@Suite struct TrustedProxiesTests {
    @Test func addressesAndRangesOfBothFamiliesAreTrustedAndNothingBeyondThem() throws {
        let proxies = try TrustedProxies("127.0.0.1, 10.244.0.0/16 ,fd00::/8, 192.168.1.128/25")
        for trusted in ["127.0.0.1", "10.244.0.1", "10.244.255.254", "fd12:3456::1", "192.168.1.200", "::ffff:10.244.3.4"] {
            #expect(proxies.contains(trusted), "\(trusted)")
        }
        for stranger in ["127.0.0.2", "10.245.0.1", "fe80::1", "192.168.1.127", "not an address", ""] {
            #expect(!proxies.contains(stranger), "\(stranger)")
        }
        #expect(try TrustedProxies("0.0.0.0/0").contains("203.0.113.9"))
        #expect(try TrustedProxies("").isEmpty)
        for bad in ["10.0.0.0/33", "10.0.0/8", "example.com", "fd00::/129", "10.0.0.0/x"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try TrustedProxies(bad) }
        }
    }
}
