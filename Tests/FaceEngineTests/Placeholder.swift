import Testing

@Suite struct PlaceholderFaceEngineTests { @Test func builds() { #expect(1 + 1 == 2) } }
