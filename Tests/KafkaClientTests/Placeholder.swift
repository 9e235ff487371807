import Testing

@Suite struct PlaceholderKafkaClientTests { @Test func builds() { #expect(1 + 1 == 2) } }
