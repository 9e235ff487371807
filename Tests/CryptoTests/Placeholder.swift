import Testing

@Suite struct PlaceholderCryptoTests { @Test func builds() { #expect(1 + 1 == 2) } }
