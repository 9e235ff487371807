/// Base64 with the URL-safe alphabet and no padding (RFC 4648 section 5), as JOSE uses it.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Alphabet value of each ASCII byte, 0xFF for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(value) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output += [symbol(group >> 18), symbol(group >> 12), symbol(group >> 6), symbol(group)]
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            output += [symbol(group >> 18), symbol(group >> 12)]
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output += [symbol(group >> 18), symbol(group >> 12), symbol(group >> 6)]
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Strict decoding: refuses padding, whitespace, the standard alphabet's `+` and `/`, an
    /// impossible length, and non-zero unused trailing bits, so each byte string has exactly one
    /// accepted text form.
    public static func decode(_ s: String) -> [UInt8]? { decode(utf8: s.utf8) }

    static func decode(utf8 text: some Collection<UInt8>) -> [UInt8]? {
        let symbols = Array(text)
        guard symbols.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(symbols.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in symbols {
            let value = values[Int(symbol)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }  // leftover bits must be zero
        return output
    }

    private static func symbol(_ sextet: UInt32) -> UInt8 { alphabet[Int(sextet & 0x3F)] }
}

/// Lowercase hexadecimal.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var output = [UInt8]()
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Accepts either case; refuses odd lengths and anything that is not a hex digit.
    public static func decode(_ s: String) -> [UInt8]? {
        let symbols = Array(s.utf8)
        guard symbols.count % 2 == 0 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(symbols.count / 2)
        var index = 0
        while index < symbols.count {
            guard let high = nibble(symbols[index]), let low = nibble(symbols[index + 1]) else { return nil }
            output.append(high << 4 | low)
            index += 2
        }
        return output
    }

    private static func nibble(_ symbol: UInt8) -> UInt8? {
        switch symbol {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): symbol - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): symbol - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): symbol - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
