/// Decodes `%XX` escapes (and `+` as a space in query strings). Malformed escapes stay as they are.
func percentDecode<S: StringProtocol>(_ text: S, plusAsSpace: Bool) -> String {
    let utf8 = text.utf8
    guard utf8.contains(where: { $0 == 0x25 || (plusAsSpace && $0 == 0x2B) }) else {
        return String(text)
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count)
    var index = utf8.startIndex
    while index != utf8.endIndex {
        let byte = utf8[index]
        if byte == 0x25,
           let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), high != utf8.endIndex,
           let low = utf8.index(index, offsetBy: 2, limitedBy: utf8.endIndex), low != utf8.endIndex,
           let h = hexValue(utf8[high]), let l = hexValue(utf8[low]) {
            bytes.append(h << 4 | l)
            index = utf8.index(after: low)
            continue
        }
        bytes.append(plusAsSpace && byte == 0x2B ? 0x20 : byte)
        index = utf8.index(after: index)
    }
    return String(decoding: bytes, as: UTF8.self)
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: c - 0x30
    case 0x41...0x46: c - 0x41 + 10
    case 0x61...0x66: c - 0x61 + 10
    default: nil
    }
}
