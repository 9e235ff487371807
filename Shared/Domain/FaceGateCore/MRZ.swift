import Foundation

/// The machine-readable zone of an ICAO 9303 travel document: TD1 (ID card, 3 lines of 30) and
/// TD3 (passport, 2 lines of 44).
public enum MRZFormat: String, Codable, Sendable, Equatable {
    case td1 = "TD1"
    case td3 = "TD3"

    public var lineCount: Int { self == .td1 ? 3 : 2 }
    public var lineLength: Int { self == .td1 ? 30 : 44 }
}

/// An MRZ as read: the document's fields exactly as the kiosk sends them (`ocrData`, `KioskOCRData`: dates
/// `YYYY-MM-DD`, names with spaces where the MRZ has `<`, `sex` `M`, `F` or `X`), plus what only the zone has — its
/// format and its optional data, trimmed of filler (for TD1, the two optional fields joined by one space when the
/// second is present). The fields read as the document's own (`document.surname`); its JSON is one flat object.
@dynamicMemberLookup
public struct MRZDocument: Codable, Sendable, Equatable {
    public var format: MRZFormat
    /// The fields the kiosk sends.
    public var ocrData: KioskOCRData
    public var optionalData: String

    public init(format: MRZFormat, documentType: String, issuingState: String, documentNumber: String, surname: String,
                givenNames: String, nationality: String, birthDate: String, sex: String, expiryDate: String,
                optionalData: String = "") {
        self.format = format
        ocrData = KioskOCRData(documentType: documentType, issuingState: issuingState, documentNumber: documentNumber, surname: surname,
                               givenNames: givenNames, nationality: nationality, birthDate: birthDate, sex: sex, expiryDate: expiryDate)
        self.optionalData = optionalData
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<KioskOCRData, Value>) -> Value {
        get { ocrData[keyPath: field] }
        set { ocrData[keyPath: field] = newValue }
    }

    private enum Keys: String, CodingKey { case format, optionalData }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        format = try container.decode(MRZFormat.self, forKey: .format)
        optionalData = try container.decode(String.self, forKey: .optionalData)
        ocrData = try KioskOCRData(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try ocrData.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(format, forKey: .format)
        try container.encode(optionalData, forKey: .optionalData)
    }

    /// True once the expiry date has passed: the document is valid through its expiry day (UTC).
    public func isExpired(on date: Date = Date()) -> Bool {
        guard let expiry = MRZ.calendarDate(iso: ocrData.expiryDate) else { return true }
        return expiry < MRZ.utcDate(date)
    }
}

/// A named part of the MRZ, used in errors.
public enum MRZField: String, Sendable, Equatable, CaseIterable {
    case documentType, issuingState, documentNumber, optionalData, birthDate, sex, expiryDate, nationality, names
    case personalNumber, composite
}

/// Why MRZ text was refused. `description` names the field, never its content, so it is safe to log.
public enum MRZError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not 3 lines of 30 or 2 lines of 44 characters.
    case layout
    /// A character outside `A-Z 0-9 <`, or a letter where digits belong (after correction).
    case invalidCharacters(MRZField)
    case checkDigit(MRZField)
    case invalidDate(MRZField)
    /// A value that cannot be written into the MRZ (compose): too long, or characters it cannot hold.
    case unrepresentable(MRZField)
    /// An issuing state or nationality that is not an ICAO 9303 Part 3 code (after at most one look-alike swap).
    case unknownCode(MRZField)

    public var field: MRZField? {
        switch self {
        case .layout: nil
        case .invalidCharacters(let f), .checkDigit(let f), .invalidDate(let f), .unrepresentable(let f),
             .unknownCode(let f): f
        }
    }

    /// The reader should try again with a better picture; composing errors are the caller's input.
    public var isRetriable: Bool {
        if case .unrepresentable = self { return false }
        return true
    }

    public var description: String {
        switch self {
        case .layout: "the MRZ must be 3 lines of 30 (TD1) or 2 lines of 44 (TD3) characters"
        case .invalidCharacters(let f): "\(f.rawValue) contains characters not allowed there"
        case .checkDigit(let f): "check digit of \(f.rawValue) does not match"
        case .invalidDate(let f): "\(f.rawValue) is not a valid date"
        case .unrepresentable(let f): "\(f.rawValue) cannot be written in an MRZ"
        case .unknownCode(let f): "\(f.rawValue) is not an ICAO 9303 state or organisation code"
        }
    }
}

/// Parsed MRZ after OCR correction: the document, the corrected lines, and how many characters changed.
public struct MRZCorrection: Sendable, Equatable {
    public var document: MRZDocument
    public var lines: [String]
    public var corrections: Int
}

public enum MRZ {
    // MARK: Check digits

    /// The ICAO 9303 check digit: weights 7, 3, 1 repeating; `0-9` are their value, `A-Z` 10–35, `<` 0.
    /// Returns nil when `text` holds another character.
    public static func checkDigit<S: StringProtocol>(_ text: S) -> Int? {
        var sum = 0
        for (index, scalar) in text.unicodeScalars.enumerated() {
            guard let value = characterValue(scalar) else { return nil }
            sum += value * [7, 3, 1][index % 3]
        }
        return sum % 10
    }

    static func characterValue(_ scalar: Unicode.Scalar) -> Int? {
        switch scalar.value {
        case 0x30...0x39: Int(scalar.value - 0x30)
        case 0x41...0x5A: Int(scalar.value - 0x41) + 10
        case 0x3C: 0
        default: nil
        }
    }

    // MARK: Parsing

    /// Parses MRZ lines exactly as given, verifying every check digit (including the composite).
    public static func parse(lines: [String], today: Date = Date()) throws(MRZError) -> MRZDocument {
        let layout = try Layout(lines: lines)
        let text = layout.characters
        for field in layout.checkedFields {
            guard field.range.allSatisfy({ field.kind.allows(text[$0]) }) else { throw .invalidCharacters(field.name) }
            guard checks(field, in: text) else { throw .checkDigit(field.name) }
        }
        for field in layout.plainFields + layout.compositeOnlyFields where !field.range.allSatisfy({ field.kind.allows(text[$0]) }) {
            throw .invalidCharacters(field.name)
        }
        guard checks(layout.composite, in: text) else { throw .checkDigit(.composite) }
        return try layout.document(from: text, today: today)
    }

    /// Parses MRZ lines read by OCR, undoing the usual confusions (`0`/`O`, `1`/`I`, `5`/`S`, `8`/`B`, `2`/`Z`,
    /// `6`/`G`, `K`/`<` …). A field with a check digit is changed only when its check digit confirms one reading
    /// with the fewest changes; a letters-only field (codes, names, sex) has digits mapped to the letters they
    /// resemble, since no digit may stand there; filler after the names is restored to `<`.
    public static func correct(lines: [String], today: Date = Date()) throws(MRZError) -> MRZCorrection {
        let layout = try Layout(lines: lines)
        var text = layout.characters
        let original = text
        // ICAO 9303 opens an ID card's MRZ (TD1) with `I`, `A` or `C`; OCR takes the `I` for `T`, `1`, `L` or `J`.
        if layout.format == .td1, "T1LJ".contains(text[0]) { text[0] = "I" }
        for field in layout.plainFields + layout.compositeOnlyFields {
            try correctPlain(field, in: &text)
        }
        for field in layout.plainFields where field.name == .issuingState || field.name == .nationality {
            try correctCode(field, in: &text)
        }
        for field in layout.checkedFields {
            try correctChecked(field, in: &text)
        }
        if !checks(layout.composite, in: text) {
            // Fields covered only by the composite (TD1 optional data) are corrected against it.
            let uncovered = layout.compositeOnlyFields
            guard !uncovered.isEmpty else { throw .checkDigit(.composite) }
            let positions = uncovered.flatMap { Array($0.range) }
            guard let fixed = bestCandidate(text, positions: positions, kind: .alphanumeric,
                                            accept: { checks(layout.composite, in: $0) }) else {
                throw .checkDigit(.composite)
            }
            text = fixed
        }
        let document = try layout.document(from: text, today: today)
        let changed = zip(text, original).filter { $0 != $1 }.count
        return MRZCorrection(document: document, lines: layout.lines(of: text), corrections: changed)
    }

    static func checks(_ field: CheckedField, in text: [Character]) -> Bool {
        let digit = text[field.check]
        // An empty optional field may carry `<` as its check digit.
        if digit == "<" { return field.fillerCheckAllowed && field.range.allSatisfy { text[$0] == "<" } }
        guard digit.isASCII, let expected = digit.wholeNumberValue else { return false }
        return checkDigit(field.segments.map { String(text[$0]) }.joined()) == expected
    }

    private static func correctPlain(_ field: PlainField, in text: inout [Character]) throws(MRZError) {
        for index in field.range where !field.kind.allows(text[index]) {
            guard let replacement = field.kind.forced(text[index]) else { throw .invalidCharacters(field.name) }
            text[index] = replacement
        }
        if field.name == .names {
            restoreNameFiller(field.range, in: &text)
        } else if field.kind == .alphanumeric {
            restoreFiller(field.range, in: &text)
        }
    }

    /// OCR reads a filler `<` as `K`, and `K` weighs 20 ≡ 0 (mod 10) like `<`, so no check digit can catch it.
    /// Filler only pads the end of a field: a `K` with filler before it and only filler after it is filler.
    static func restoreFiller(_ range: Range<Int>, in text: inout [Character]) {
        var index = range.upperBound - 1
        while index > range.lowerBound {
            if text[index] == "K", text[index - 1] == "<" { text[index] = "<" }
            guard text[index] == "<" else { return }
            index -= 1
        }
    }

    /// Names have no check digit, but their layout is fixed: `SURNAME<<GIVEN<NAMES` then filler. After the
    /// given names end with `<<`, nothing but filler may follow, and OCR's stray `K`s there are filler.
    static func restoreNameFiller(_ range: Range<Int>, in text: inout [Character]) {
        let name = Array(text[range])
        guard let separator = firstDoubleFiller(name, from: 0),
              let end = firstDoubleFiller(name, from: separator + 2) else { return }
        for offset in end..<name.count where name[offset] != "<" {
            text[range.lowerBound + offset] = "<"
        }
        // A lone `K` word right at the end of the given names, followed only by filler, is a misread `<`.
        var last = end - 1
        while last > separator + 1, name[last] == "K", last - 1 > separator + 1 {
            if name[last - 1] == "<" {
                text[range.lowerBound + last] = "<"
                last -= 2
            } else { break }
        }
    }

    private static func firstDoubleFiller(_ name: [Character], from start: Int) -> Int? {
        var index = start
        while index + 1 < name.count {
            if name[index] == "<", name[index + 1] == "<" { return index }
            index += 1
        }
        return nil
    }

    /// Codes have no check digit, but they must be on the ICAO list. A code that is not is changed by one
    /// look-alike swap only when exactly one swap gives a listed code (`IPN` → `JPN`); otherwise it is refused.
    static func correctCode(_ field: PlainField, in text: inout [Character]) throws(MRZError) {
        let code = Array(text[field.range])
        if isKnownCode(String(code)) { return }
        var readings = Set<String>()
        for offset in code.indices {
            for alternative in CharacterKind.letterLookalikes[code[offset]] ?? [] {
                var candidate = code
                candidate[offset] = alternative
                if isKnownCode(String(candidate)) { readings.insert(String(candidate)) }
            }
        }
        guard readings.count == 1, let reading = readings.first else { throw .unknownCode(field.name) }
        text.replaceSubrange(field.range, with: Array(reading))
    }

    private static func correctChecked(_ field: CheckedField, in text: inout [Character]) throws(MRZError) {
        // The check digit itself is a digit (or `<` for an empty optional field).
        if text[field.check] != "<", text[field.check].wholeNumberValue == nil || !text[field.check].isASCII {
            guard let digit = CharacterKind.digits.forced(text[field.check]) else { throw .invalidCharacters(field.name) }
            text[field.check] = digit
        }
        if field.kind == .digits {
            for index in field.range where !CharacterKind.digits.allows(text[index]) {
                guard let digit = CharacterKind.digits.forced(text[index]) else { throw .invalidCharacters(field.name) }
                text[index] = digit
            }
        }
        guard field.range.allSatisfy({ field.kind.allows(text[$0]) }) else { throw .invalidCharacters(field.name) }
        if field.kind == .alphanumeric { restoreFiller(field.range, in: &text) }
        if checks(field, in: text) { return }
        // A `<` check digit over a non-empty field is a misread digit too: try `0`.
        let positions = Array(field.range) + [field.check]
        guard let fixed = bestCandidate(text, positions: positions, kind: field.kind, accept: { checks(field, in: $0) }) else {
            throw .checkDigit(field.name)
        }
        text = fixed
    }

    /// Tries look-alike substitutions at `positions` (up to `maxChanges` at once) and returns the reading that
    /// `accept`s with the fewest changes, only when exactly one reading has that fewest number of changes.
    static func bestCandidate(_ text: [Character], positions: [Int], kind: CharacterKind, maxChanges: Int = 1,
                              accept: ([Character]) -> Bool) -> [Character]? {
        let options: [(Int, [Character])] = positions.compactMap { index in
            let alternatives = kind.lookalikes(of: text[index])
            return alternatives.isEmpty ? nil : (index, alternatives)
        }
        // Bounded search: a mod-10 check digit confirms one reading in ten by chance, so every extra
        // substitution allowed multiplies the readings that pass by accident. With one substitution, a
        // digit misread as another digit (no look-alike) still passes its field's check about 3 times in 10;
        // the composite check digit then refuses all but about 1 in 10 of those.
        var best: [Character]?
        var bestChanges = Int.max
        var tiedAtBest = false
        func visit(_ start: Int, _ current: [Character], _ changes: Int) {
            if changes > 0, accept(current) {
                if changes < bestChanges { best = current; bestChanges = changes; tiedAtBest = false }
                else if changes == bestChanges, current != best { tiedAtBest = true }
            }
            guard changes < maxChanges, changes < bestChanges else { return }
            for optionIndex in start..<options.count {
                let (index, alternatives) = options[optionIndex]
                for alternative in alternatives {
                    var next = current
                    next[index] = alternative
                    visit(optionIndex + 1, next, changes + 1)
                }
            }
        }
        visit(0, text, 0)
        return tiedAtBest ? nil : best
    }

    // MARK: Composing

    /// Writes a document's fields as MRZ lines with every check digit computed. Names too long for the field
    /// are truncated as ICAO 9303 prescribes (the parsed document then has the truncated names).
    public static func compose(_ document: MRZDocument) throws(MRZError) -> [String] {
        let type = try code(document.documentType, width: 2, field: .documentType)
        let state = try code(document.issuingState, width: 3, field: .issuingState)
        let nationality = try code(document.nationality, width: 3, field: .nationality)
        guard isKnownCode(state) else { throw .unknownCode(.issuingState) }
        guard isKnownCode(nationality) else { throw .unknownCode(.nationality) }
        let number = try mrzText(document.documentNumber, field: .documentNumber)
        let birth = try yymmdd(document.birthDate, field: .birthDate)
        let expiry = try yymmdd(document.expiryDate, field: .expiryDate)
        let sex: String
        switch document.sex {
        case "M", "F": sex = document.sex
        case "X", "<", "": sex = "<"
        default: throw .unrepresentable(.sex)
        }
        let surname = try mrzText(document.surname, field: .names)
        let given = try mrzText(document.givenNames, field: .names)
        let name = given.isEmpty ? surname : surname + "<<" + given
        func digit(_ text: String) -> String { String(checkDigit(text)!) }
        switch document.format {
        case .td1:
            let parts = document.optionalData.split(separator: " ", maxSplits: 1).map(String.init)
            var optional1 = try mrzText(parts.first ?? "", field: .optionalData)
            let optional2 = try pad(try mrzText(parts.count > 1 ? parts[1] : "", field: .optionalData), 11, .optionalData)
            var numberField: String
            if number.count <= 9 {
                numberField = pad(number, 9) + digit(pad(number, 9))
            } else {
                // Long numbers: 9 characters, `<`, then the rest and its check digit open the optional data.
                numberField = String(number.prefix(9)) + "<"
                optional1 = String(number.dropFirst(9)) + digit(number) + (optional1.isEmpty ? "" : "<" + optional1)
            }
            let line1 = type + state + numberField + (try pad(optional1, 15, .optionalData))
            let birthField = birth + digit(birth), expiryField = expiry + digit(expiry)
            let upper = String(line1.dropFirst(5)) + birthField + expiryField + optional2
            let line2 = birthField + sex + expiryField + nationality + optional2 + digit(upper)
            return [line1, line2, String(pad(name, 30).prefix(30))]
        case .td3:
            guard number.count <= 9 else { throw .unrepresentable(.documentNumber) }
            let personal = try pad(try mrzText(document.optionalData, field: .personalNumber), 14, .personalNumber)
            // An empty personal number may carry `<` or `0` as its digit; `0` is what the check computes anyway.
            let personalCheck = digit(personal)
            let numberField = pad(number, 9) + digit(pad(number, 9))
            let birthField = birth + digit(birth), expiryField = expiry + digit(expiry)
            let line1 = String((type + state + pad(name, 39)).prefix(44))
            let composite = numberField + birthField + expiryField + personal + personalCheck
            let line2 = numberField + nationality + birthField + sex + expiryField + personal + personalCheck + digit(composite)
            return [line1, line2]
        }
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: "<", count: width - text.count)
    }

    private static func pad(_ text: String, _ width: Int, _ field: MRZField) throws(MRZError) -> String {
        guard text.count <= width else { throw .unrepresentable(field) }
        return pad(text, width)
    }

    private static func code(_ text: String, width: Int, field: MRZField) throws(MRZError) -> String {
        let value = try mrzText(text, field: field)
        guard !value.isEmpty, value.allSatisfy({ $0 == "<" || ("A"..."Z").contains($0) }) else { throw .unrepresentable(field) }
        return try pad(value, width, field)
    }

    /// Upper-cases, turns spaces and hyphens into `<`, drops apostrophes; refuses anything else outside A-Z0-9.
    private static func mrzText(_ text: String, field: MRZField) throws(MRZError) -> String {
        var result = ""
        for character in text.uppercased() {
            switch character {
            case "A"..."Z", "0"..."9", "<": result.append(character)
            case " ", "-": result.append("<")
            case "'": continue
            default: throw .unrepresentable(field)
            }
        }
        return result
    }

    private static func yymmdd(_ iso: String, field: MRZField) throws(MRZError) -> String {
        guard let date = calendarDate(iso: iso) else { throw .unrepresentable(field) }
        return String(format: "%02d%02d%02d", date.year % 100, date.month, date.day)
    }

    // MARK: ICAO 9303 Part 3 codes

    /// True when `code` is a three-letter code ICAO 9303 Part 3 allows for an issuing state or a nationality,
    /// either trimmed (`D`) or as the MRZ writes it (`D<<`).
    public static func isKnownCode(_ code: String) -> Bool {
        let padded = code.count < 3 ? code + String(repeating: "<", count: 3 - code.count) : code
        return knownCodes.contains(padded)
    }

    /// Every code as the MRZ writes it (three characters, `<`-padded).
    public static let knownCodes: Set<String> = {
        var codes = Set(stateCodes.flatMap { $0.split(separator: " ").map(String.init) })
        codes.formUnion(specialCodes)
        return codes
    }()

    /// ISO 3166-1 alpha-3, which Part 3 adopts for states and territories (Germany's own documents use `D<<`).
    private static let stateCodes = [
        "ABW AFG AGO AIA ALA ALB AND ARE ARG ARM ASM ATA ATF ATG AUS AUT AZE",
        "BDI BEL BEN BES BFA BGD BGR BHR BHS BIH BLM BLR BLZ BMU BOL BRA BRB BRN BTN BVT BWA",
        "CAF CAN CCK CHE CHL CHN CIV CMR COD COG COK COL COM CPV CRI CUB CUW CXR CYM CYP CZE",
        "DEU DJI DMA DNK DOM DZA",
        "ECU EGY ERI ESH ESP EST ETH",
        "FIN FJI FLK FRA FRO FSM",
        "GAB GBR GEO GGY GHA GIB GIN GLP GMB GNB GNQ GRC GRD GRL GTM GUF GUM GUY",
        "HKG HMD HND HRV HTI HUN",
        "IDN IMN IND IOT IRL IRN IRQ ISL ISR ITA",
        "JAM JEY JOR JPN",
        "KAZ KEN KGZ KHM KIR KNA KOR KWT",
        "LAO LBN LBR LBY LCA LIE LKA LSO LTU LUX LVA",
        "MAC MAF MAR MCO MDA MDG MDV MEX MHL MKD MLI MLT MMR MNE MNG MNP MOZ MRT MSR MTQ MUS MWI MYS MYT",
        "NAM NCL NER NFK NGA NIC NIU NLD NOR NPL NRU NZL",
        "OMN",
        "PAK PAN PCN PER PHL PLW PNG POL PRI PRK PRT PRY PSE PYF",
        "QAT",
        "REU ROU RUS RWA",
        "SAU SDN SEN SGP SGS SHN SJM SLB SLE SLV SMR SOM SPM SRB SSD STP SUR SVK SVN SWE SWZ SXM SYC SYR",
        "TCA TCD TGO THA TJK TKL TKM TLS TON TTO TUN TUR TUV TWN TZA",
        "UGA UKR UMI URY USA UZB",
        "VAT VCT VEN VGB VIR VNM VUT",
        "WLF WSM",
        "YEM",
        "ZAF ZMB ZWE",
    ]

    /// The codes Part 3 adds to ISO 3166-1, in the form the MRZ carries them.
    private static let specialCodes: Set<String> = [
        "D<<",  // Germany
        "GBD", "GBN", "GBO", "GBP", "GBS",  // British Overseas Territories Citizen, National (Overseas), Overseas Citizen, Protected Person, Subject
        "EUE",  // European Union
        "UNO", "UNA", "UNK",  // United Nations: the Organization, a specialized agency, a resident of Kosovo (UNMIK)
        "XBA", "XIM", "XCC", "XCE", "XCO", "XDC", "XEC", "XES", "XOM", "XPO",  // other issuing organisations
        "XXA", "XXB", "XXC", "XXX",  // stateless, refugee (1951 Convention), other refugee, unspecified nationality
        "UTO",  // Utopia: the fictitious state of the standard's specimen documents
    ]

    // MARK: Dates

    static func calendarDate(iso: String) -> CalendarDate? {
        let parts = iso.split(separator: "-")
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]) else { return nil }
        return CalendarDate(year: year, month: month, day: day)
    }

    static func utcDate(_ instant: Date) -> CalendarDate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: instant)
        return CalendarDate(year: parts.year!, month: parts.month!, day: parts.day!)!
    }

    static func iso(_ date: CalendarDate) -> String { String(format: "%04d-%02d-%02d", date.year, date.month, date.day) }
}

// MARK: - Layout of the two formats

enum CharacterKind: Equatable {
    case digits, letters, alphanumeric

    func allows(_ character: Character) -> Bool {
        switch self {
        case .digits: ("0"..."9").contains(character)
        case .letters: character == "<" || ("A"..."Z").contains(character)
        case .alphanumeric: character == "<" || ("A"..."Z").contains(character) || ("0"..."9").contains(character)
        }
    }

    static let digitForLetter: [Character: Character] = [
        "O": "0", "Q": "0", "D": "0", "U": "0", "I": "1", "L": "1", "T": "1", "Z": "2", "S": "5", "B": "8", "G": "6", "A": "4",
    ]
    static let letterForDigit: [Character: Character] = ["0": "O", "1": "I", "2": "Z", "5": "S", "8": "B", "6": "G", "4": "A"]

    /// Letters tesseract takes for one another in OCR-B, tried when a three-letter code is not on the ICAO list.
    static let letterLookalikes: [Character: [Character]] = [
        "I": ["L", "J", "T"], "L": ["I", "J"], "J": ["I", "L"], "T": ["I"],
        "O": ["D", "Q", "U", "C"], "D": ["O"], "Q": ["O"], "U": ["V", "O"], "V": ["U", "Y"], "Y": ["V"],
        "E": ["F", "B"], "F": ["E"], "B": ["E"], "C": ["G", "O"], "G": ["C"],
        "M": ["N", "H"], "N": ["M", "H"], "H": ["N", "M"], "K": ["X", "<"], "X": ["K"], "W": ["V"],
    ]

    /// The one replacement the field type forces for a character it cannot hold.
    func forced(_ character: Character) -> Character? {
        switch self {
        case .digits: Self.digitForLetter[character] ?? (character == "<" ? "0" : nil)
        case .letters: Self.letterForDigit[character]
        case .alphanumeric: nil
        }
    }

    /// The look-alikes worth trying for a character of an alphanumeric field.
    func lookalikes(of character: Character) -> [Character] {
        switch self {
        case .digits:
            return []
        case .letters:
            return []
        case .alphanumeric:
            switch character {
            // `K`/`<` (20 and 0) and `G`/`6` (16 and 6) weigh the same modulo 10: no check digit can tell
            // them apart, so they are not tried here (filler `K`s are handled by position instead).
            case "0": return ["O"]
            case "O": return ["0"]
            case "1": return ["I"]
            case "I": return ["1"]
            case "5": return ["S"]
            case "S": return ["5"]
            case "8": return ["B"]
            case "B": return ["8"]
            case "2": return ["Z"]
            case "Z": return ["2"]
            case "7": return ["T"]
            case "T": return ["7"]
            default: return []
            }
        }
    }
}

/// A field followed by its check digit; `segments` are the ranges the digit covers.
struct CheckedField {
    var name: MRZField
    var range: Range<Int>
    var check: Int
    var kind: CharacterKind
    var segments: [Range<Int>]
    var fillerCheckAllowed = false

    init(_ name: MRZField, _ range: Range<Int>, check: Int, kind: CharacterKind, fillerCheckAllowed: Bool = false) {
        self.name = name
        self.range = range
        self.check = check
        self.kind = kind
        segments = [range]
        self.fillerCheckAllowed = fillerCheckAllowed
    }

    init(composite segments: [Range<Int>], check: Int) {
        name = .composite
        range = segments[0].lowerBound..<segments[0].lowerBound
        self.check = check
        kind = .alphanumeric
        self.segments = segments
    }
}

struct PlainField {
    var name: MRZField
    var range: Range<Int>
    var kind: CharacterKind
}

/// Positions in the concatenated lines (line 2 of TD1 starts at 30, line 3 at 60; line 2 of TD3 at 44).
struct Layout {
    let format: MRZFormat
    let characters: [Character]
    let checkedFields: [CheckedField]
    let plainFields: [PlainField]
    let composite: CheckedField
    let compositeOnlyFields: [PlainField]

    init(lines: [String]) throws(MRZError) {
        let trimmed = lines.map { $0.trimmingCharacters(in: .whitespaces).uppercased() }.filter { !$0.isEmpty }
        if trimmed.count == 3, trimmed.allSatisfy({ $0.count == 30 }) {
            format = .td1
        } else if trimmed.count == 2, trimmed.allSatisfy({ $0.count == 44 }) {
            format = .td3
        } else {
            throw .layout
        }
        characters = Array(trimmed.joined())
        switch format {
        case .td1:
            // Line 2 starts at 30, line 3 at 60.
            let optional1 = PlainField(name: .optionalData, range: 15..<30, kind: .alphanumeric)
            let optional2 = PlainField(name: .optionalData, range: 48..<59, kind: .alphanumeric)
            // A `<` in place of the number's check digit marks a long number continued in the optional
            // data; its check digit is verified when the document is read out.
            let longNumber = characters[14] == "<"
            checkedFields = (longNumber ? [] : [CheckedField(.documentNumber, 5..<14, check: 14, kind: .alphanumeric)]) + [
                CheckedField(.birthDate, 30..<36, check: 36, kind: .digits),
                CheckedField(.expiryDate, 38..<44, check: 44, kind: .digits),
            ]
            plainFields = [
                PlainField(name: .documentType, range: 0..<2, kind: .letters),
                PlainField(name: .issuingState, range: 2..<5, kind: .letters),
                PlainField(name: .sex, range: 37..<38, kind: .letters),
                PlainField(name: .nationality, range: 45..<48, kind: .letters),
                PlainField(name: .names, range: 60..<90, kind: .letters),
            ]
            composite = CheckedField(composite: [5..<30, 30..<37, 38..<45, 48..<59], check: 59)
            compositeOnlyFields = [optional1, optional2]
        case .td3:
            checkedFields = [
                CheckedField(.documentNumber, 44..<53, check: 53, kind: .alphanumeric),
                CheckedField(.birthDate, 57..<63, check: 63, kind: .digits),
                CheckedField(.expiryDate, 65..<71, check: 71, kind: .digits),
                CheckedField(.personalNumber, 72..<86, check: 86, kind: .alphanumeric, fillerCheckAllowed: true),
            ]
            plainFields = [
                PlainField(name: .documentType, range: 0..<2, kind: .letters),
                PlainField(name: .issuingState, range: 2..<5, kind: .letters),
                PlainField(name: .names, range: 5..<44, kind: .letters),
                PlainField(name: .nationality, range: 54..<57, kind: .letters),
                PlainField(name: .sex, range: 64..<65, kind: .letters),
            ]
            composite = CheckedField(composite: [44..<54, 57..<64, 65..<87], check: 87)
            compositeOnlyFields = []
        }
    }

    func lines(of text: [Character]) -> [String] {
        stride(from: 0, to: text.count, by: format.lineLength).map { String(text[$0..<$0 + format.lineLength]) }
    }

    func document(from text: [Character], today: Date) throws(MRZError) -> MRZDocument {
        func string(_ range: Range<Int>) -> String { String(text[range]) }
        func trimmed(_ range: Range<Int>) -> String {
            var value = string(range)
            while value.hasSuffix("<") { value.removeLast() }
            return value
        }
        func words(_ text: Substring) -> String {
            text.split(separator: "<", omittingEmptySubsequences: true).joined(separator: " ")
        }
        let sexCharacter = text[format == .td1 ? 37 : 64]
        let sex: String
        switch sexCharacter {
        case "M", "F": sex = String(sexCharacter)
        case "X", "<": sex = "X"
        default: throw .invalidCharacters(.sex)
        }
        let nameRange = format == .td1 ? 60..<90 : 5..<44
        let name = string(nameRange)
        let surname: String, given: String
        if let separator = name.range(of: "<<") {
            surname = words(name[..<separator.lowerBound])
            let rest = name[separator.upperBound...]
            // Given names end at the next `<<`; what follows is filler.
            let end = rest.range(of: "<<")?.lowerBound ?? rest.endIndex
            given = words(rest[..<end])
        } else {
            surname = words(name[...])
            given = ""
        }
        guard !surname.isEmpty else { throw .invalidCharacters(.names) }

        let birthRange = format == .td1 ? 30..<36 : 57..<63
        let expiryRange = format == .td1 ? 38..<44 : 65..<71
        let birth = try date(string(birthRange), field: .birthDate, today: today)
        let expiry = try date(string(expiryRange), field: .expiryDate, today: nil)

        var number: String
        var optional: String
        switch format {
        case .td1:
            number = trimmed(5..<14)
            var optional1 = trimmed(15..<30)
            if text[14] == "<", !optional1.isEmpty {
                // A long document number continues in the optional data, its check digit last.
                let end = optional1.firstIndex(of: "<") ?? optional1.endIndex
                let continuation = optional1[..<end]
                guard continuation.count >= 2, let checkCharacter = continuation.last?.wholeNumberValue else {
                    throw .checkDigit(.documentNumber)
                }
                number = string(5..<14) + continuation.dropLast()
                guard MRZ.checkDigit(number) == checkCharacter else { throw .checkDigit(.documentNumber) }
                optional1 = String(optional1[end...].drop { $0 == "<" })
            }
            let optional2 = trimmed(48..<59)
            optional = optional2.isEmpty ? optional1 : optional1 + " " + optional2
        case .td3:
            number = trimmed(44..<53)
            optional = trimmed(72..<86)
        }
        guard !number.isEmpty else { throw .invalidCharacters(.documentNumber) }
        let stateRange = 2..<5, nationalityRange = format == .td1 ? 45..<48 : 54..<57
        guard MRZ.isKnownCode(string(stateRange)) else { throw .unknownCode(.issuingState) }
        guard MRZ.isKnownCode(string(nationalityRange)) else { throw .unknownCode(.nationality) }
        return MRZDocument(
            format: format, documentType: trimmed(0..<2), issuingState: trimmed(stateRange), documentNumber: number,
            surname: surname, givenNames: given, nationality: trimmed(nationalityRange),
            birthDate: MRZ.iso(birth), sex: sex, expiryDate: MRZ.iso(expiry), optionalData: optional)
    }

    /// YYMMDD to a date. Birth: the latest century that is not in the future; expiry: 20YY.
    private func date(_ yymmdd: String, field: MRZField, today: Date?) throws(MRZError) -> CalendarDate {
        let digits = yymmdd.compactMap(\.wholeNumberValue)
        guard digits.count == 6 else { throw .invalidDate(field) }
        let yy = digits[0] * 10 + digits[1], month = digits[2] * 10 + digits[3], day = digits[4] * 10 + digits[5]
        if let today {
            let now = MRZ.utcDate(today)
            if let recent = CalendarDate(year: 2000 + yy, month: month, day: day), recent <= now { return recent }
            guard let older = CalendarDate(year: 1900 + yy, month: month, day: day) else { throw .invalidDate(field) }
            return older
        }
        guard let date = CalendarDate(year: 2000 + yy, month: month, day: day) else { throw .invalidDate(field) }
        return date
    }
}
