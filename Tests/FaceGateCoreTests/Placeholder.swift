import Testing

@Suite struct PlaceholderFaceGateCoreTests { @Test func builds() { #expect(1 + 1 == 2) } }
