import Testing

@Suite struct PlaceholderPostgresClientTests { @Test func builds() { #expect(1 + 1 == 2) } }
