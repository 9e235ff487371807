import Crypto

/// Bytes from hex written the way the standards print it (spaces and line breaks allowed).
func bytes(_ hex: String) -> [UInt8] {
    let compact = hex.filter { !$0.isWhitespace }
    guard let decoded = Hex.decode(compact) else { fatalError("bad hex in test vector: \(compact.prefix(16))") }
    return decoded
}

func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }

func flippingBit(_ bit: Int, of input: [UInt8]) -> [UInt8] {
    var output = input
    output[bit / 8] ^= 1 << UInt8(bit % 8)
    return output
}
