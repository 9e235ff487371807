import Foundation

/// An 18-character PRC resident identity number (GB 11643-1999): 6-digit region, 8-digit birth date
/// (YYYYMMDD), 3-digit sequence, and an ISO 7064 MOD 11-2 check character (`X` for 10).
public struct ResidentIDNumber: Sendable, Equatable, CustomStringConvertible {
    public let value: String
    public let birthYear: Int
    public let birthMonth: Int
    public let birthDay: Int

    static let weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    static let checkCharacters: [Character] = ["1", "0", "X", "9", "8", "7", "6", "5", "4", "3", "2"]

    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case format, checkDigit, birthDate
        public var description: String {
            switch self {
            case .format: "the ID number must be 17 digits followed by a digit or X"
            case .checkDigit: "the ID number's check digit is wrong"
            case .birthDate: "the ID number does not contain a real birth date"
            }
        }
    }

    /// The check character for the first 17 digits.
    public static func checkCharacter(for first17: some Collection<UInt8>) -> Character {
        var sum = 0
        for (digit, weight) in zip(first17, weights) { sum += Int(digit - 0x30) * weight }
        return checkCharacters[sum % 11]
    }

    public init(_ text: String, today: Date = Date()) throws(Problem) {
        let value = text.uppercased()
        let bytes = Array(value.utf8)
        guard bytes.count == 18, bytes.prefix(17).allSatisfy({ (0x30...0x39).contains($0) }),
              (0x30...0x39).contains(bytes[17]) || bytes[17] == UInt8(ascii: "X") else { throw .format }
        guard Self.checkCharacter(for: bytes.prefix(17)) == Character(UnicodeScalar(bytes[17])) else { throw .checkDigit }
        let digits = bytes.map { Int($0) - 0x30 }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        let year = number(6..<10), month = number(10..<12), day = number(12..<14)
        guard let birth = CalendarDate(year: year, month: month, day: day), year >= 1800,
              birth <= CalendarDate(today) else { throw .birthDate }
        self.value = value
        birthYear = year
        birthMonth = month
        birthDay = day
    }

    /// `1101**********1234`: the first four and last four characters, for logs and the audit trail.
    public var masked: String { Self.mask(value) }

    public static func mask(_ text: String) -> String {
        let characters = Array(text)
        guard characters.count > 8 else { return String(repeating: "*", count: characters.count) }
        return String(characters.prefix(4)) + String(repeating: "*", count: characters.count - 8) + String(characters.suffix(4))
    }

    public var description: String { masked }
}

/// A Gregorian calendar date without time or zone, comparable (`YYYYMMDD` order).
public struct CalendarDate: Sendable, Equatable, Comparable, Hashable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...Self.days(inMonth: month, year: year)).contains(day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// `YYYYMMDD`, exactly eight digits.
    public init?(yyyymmdd text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 8, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let digits = bytes.map { Int($0) - 0x30 }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        self.init(year: number(0..<4), month: number(4..<6), day: number(6..<8))
    }

    /// The date of `instant` in UTC+8 (China Standard Time), where CTID validity dates are defined.
    public init(_ instant: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 8 * 3600)!
        let parts = calendar.dateComponents([.year, .month, .day], from: instant)
        year = parts.year!
        month = parts.month!
        day = parts.day!
    }

    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    public static func < (a: CalendarDate, b: CalendarDate) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    public var description: String { String(format: "%04d%02d%02d", year, month, day) }
}
