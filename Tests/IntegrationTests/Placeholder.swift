import Testing

@Suite struct PlaceholderIntegrationTests { @Test func builds() { #expect(1 + 1 == 2) } }
