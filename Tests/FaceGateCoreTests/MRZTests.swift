import FaceGateCore
import FaceGateTestSupport
import Foundation
import Testing

/// The ICAO 9303 specimens (Part 5 TD1, Part 4 TD3).
let specimenTD1 = ["I<UTOD231458907<<<<<<<<<<<<<<<", "7408122F1204159UTO<<<<<<<<<<<6", "ERIKSSON<<ANNA<MARIA<<<<<<<<<<"]
let specimenTD3 = ["P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"]
let specimenDay = ISO8601DateFormatter().date(from: "2026-01-01T00:00:00Z")!

@Suite struct MRZTests {
    @Test func computesTheSpecimenCheckDigits() {
        #expect(MRZ.checkDigit("D23145890") == 7)
        #expect(MRZ.checkDigit("740812") == 2)
        #expect(MRZ.checkDigit("120415") == 9)
        #expect(MRZ.checkDigit("L898902C3") == 6)
        #expect(MRZ.checkDigit("ZE184226B<<<<<") == 1)
        // The TD1 composite: line 1 from the document number on, both dates with their digits, optional data 2.
        #expect(MRZ.checkDigit("D231458907<<<<<<<<<<<<<<<" + "7408122" + "1204159" + "<<<<<<<<<<<") == 6)
        #expect(MRZ.checkDigit("abc") == nil)
    }

    @Test func parsesTheTD1Specimen() throws {
        let document = try MRZ.parse(lines: specimenTD1, today: specimenDay)
        #expect(document == MRZDocument(
            format: .td1, documentType: "I", issuingState: "UTO", documentNumber: "D23145890", surname: "ERIKSSON",
            givenNames: "ANNA MARIA", nationality: "UTO", birthDate: "1974-08-12", sex: "F", expiryDate: "2012-04-15"))
        #expect(document.isExpired(on: specimenDay))
        #expect(!document.isExpired(on: ISO8601DateFormatter().date(from: "2012-04-15T23:00:00Z")!))
    }

    @Test func parsesTheTD3Specimen() throws {
        let document = try MRZ.parse(lines: specimenTD3, today: specimenDay)
        #expect(document == MRZDocument(
            format: .td3, documentType: "P", issuingState: "UTO", documentNumber: "L898902C3", surname: "ERIKSSON",
            givenNames: "ANNA MARIA", nationality: "UTO", birthDate: "1974-08-12", sex: "F", expiryDate: "2012-04-15",
            optionalData: "ZE184226B"))
    }

    @Test func composesTheSpecimensBack() throws {
        #expect(try MRZ.compose(try MRZ.parse(lines: specimenTD1, today: specimenDay)) == specimenTD1)
        #expect(try MRZ.compose(try MRZ.parse(lines: specimenTD3, today: specimenDay)) == specimenTD3)
    }

    @Test func placesTwoDigitBirthYearsInTheRightCentury() throws {
        var document = try MRZ.parse(lines: specimenTD1, today: specimenDay)
        document.birthDate = "2025-12-31"
        let lines = try MRZ.compose(document)
        #expect(try MRZ.parse(lines: lines, today: specimenDay).birthDate == "2025-12-31")
        // The same digits a day before that birthday would be in the future, so they mean 1925.
        let before = ISO8601DateFormatter().date(from: "2025-12-30T12:00:00Z")!
        #expect(try MRZ.parse(lines: lines, today: before).birthDate == "1925-12-31")
        #expect(try MRZ.parse(lines: lines, today: specimenDay).expiryDate == "2012-04-15")
    }

    @Test func encodesTheOCRDataKeys() throws {
        let document = try MRZ.parse(lines: specimenTD1, today: specimenDay)
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(document)) as! [String: Any]
        #expect(Set(object.keys) == ["format", "documentType", "issuingState", "documentNumber", "surname", "givenNames",
                                     "nationality", "birthDate", "sex", "expiryDate", "optionalData"])
        #expect(object["format"] as? String == "TD1")
        #expect(try JSONDecoder().decode(MRZDocument.self, from: try JSONEncoder().encode(document)) == document)
    }

    @Test func refusesEveryWrongCheckDigitNamingTheField() {
        func altered(_ lines: [String], line: Int, column: Int) -> [String] {
            var result = lines
            var characters = Array(result[line])
            characters[column] = Character(String(((characters[column].wholeNumberValue ?? 0) + 1) % 10))
            result[line] = String(characters)
            return result
        }
        let cases: [([String], Int, Int, MRZField)] = [
            (specimenTD1, 0, 14, .documentNumber), (specimenTD1, 1, 6, .birthDate), (specimenTD1, 1, 14, .expiryDate),
            (specimenTD1, 1, 29, .composite),
            (specimenTD3, 1, 9, .documentNumber), (specimenTD3, 1, 19, .birthDate), (specimenTD3, 1, 27, .expiryDate),
            (specimenTD3, 1, 42, .personalNumber), (specimenTD3, 1, 43, .composite),
        ]
        for (lines, line, column, field) in cases {
            #expect(throws: MRZError.checkDigit(field)) { try MRZ.parse(lines: altered(lines, line: line, column: column)) }
            // Correction may find a look-alike reading that satisfies the altered digit; the composite, computed
            // over the true field, then refuses it.
            #expect(throws: MRZError.self) { try MRZ.correct(lines: altered(lines, line: line, column: column)) }
        }
        #expect(MRZError.checkDigit(.documentNumber).description == "check digit of documentNumber does not match")
        #expect(throws: MRZError.layout) { try MRZ.parse(lines: Array(specimenTD1.prefix(2))) }
        #expect(throws: MRZError.invalidDate(.birthDate)) {
            // 741312: month 13, with its check digit recomputed so only the date is wrong.
            var line = Array(specimenTD1[1])
            line.replaceSubrange(0..<7, with: Array("741312") + [Character(String(MRZ.checkDigit("741312")!))])
            let upper = String(Array(specimenTD1[0]).dropFirst(5)) + String(line[0..<7]) + String(line[8..<15]) + String(line[18..<29])
            line[29] = Character(String(MRZ.checkDigit(upper)!))
            _ = try MRZ.parse(lines: [specimenTD1[0], String(line), specimenTD1[2]])
        }
    }

    @Test func correctsOCRConfusionsTheCheckDigitsConfirm() throws {
        let expected = try MRZ.parse(lines: specimenTD1, today: specimenDay)
        // Letters in digit fields, digits in letter fields, `O` for `0` in the document number, `K` for filler.
        let misread = ["I<UT0D2314589O7<<<<<<<<K<<<<<<", "74O8122F12O4159UTO<<<<<<<<<<<6", "ERIKSSON<<ANNA<MAR1A<<<<<K<<<<"]
        #expect(throws: MRZError.self) { try MRZ.parse(lines: misread) }
        let corrected = try MRZ.correct(lines: misread, today: specimenDay)
        #expect(corrected.document == expected)
        #expect(corrected.lines == specimenTD1)
        #expect(corrected.corrections == 7)

        let passport = ["P<UT0ERIKSSON<<ANNA<MAR1A<<<<<<<<<K<<<<<<<<<", "L898902C36UT07408122F12O4159ZE184226B<<<<<10"]
        let fixed = try MRZ.correct(lines: passport, today: specimenDay)
        #expect(fixed.lines == specimenTD3)
        #expect(fixed.corrections == 5)
    }

    /// The TD1 specimen with another issuing state and nationality (neither is covered by a check digit).
    static func specimenWithCodes(state: String, nationality: String) -> [String] {
        func padded(_ code: String) -> String { code + String(repeating: "<", count: 3 - code.count) }
        return ["I<" + padded(state) + specimenTD1[0].dropFirst(5),
                String(specimenTD1[1].prefix(15)) + padded(nationality) + specimenTD1[1].dropFirst(18), specimenTD1[2]]
    }

    @Test func knowsTheICAOCodes() {
        for code in ["JPN", "FRA", "DEU", "D", "D<<", "GBD", "GBN", "GBO", "GBP", "GBS", "EUE", "UNO", "UNA", "UNK",
                     "XXA", "XXB", "XXC", "XXX", "UTO", "ZWE", "ABW"] {
            #expect(MRZ.isKnownCode(code), "\(code)")
        }
        for code in ["IPN", "ERA", "XYZ", "ZZZ", "DE", "<<<", "", "jpn", "D<K"] {
            #expect(!MRZ.isKnownCode(code), "\(code)")
        }
        #expect(MRZ.knownCodes.allSatisfy { $0.count == 3 })
    }

    @Test func refusesUnknownCodesWhenParsing() throws {
        let german = try MRZ.parse(lines: Self.specimenWithCodes(state: "D", nationality: "JPN"), today: specimenDay)
        #expect(german.issuingState == "D")
        #expect(german.nationality == "JPN")
        #expect(throws: MRZError.unknownCode(.issuingState)) {
            try MRZ.parse(lines: Self.specimenWithCodes(state: "IPN", nationality: "JPN"), today: specimenDay)
        }
        #expect(throws: MRZError.unknownCode(.nationality)) {
            try MRZ.parse(lines: Self.specimenWithCodes(state: "JPN", nationality: "XYZ"), today: specimenDay)
        }
        var passport = specimenTD3
        passport[1] = String(passport[1].prefix(10)) + "UTQ" + passport[1].dropFirst(13)
        #expect(throws: MRZError.unknownCode(.nationality)) { try MRZ.parse(lines: passport, today: specimenDay) }
        #expect(MRZError.unknownCode(.issuingState).description == "issuingState is not an ICAO 9303 state or organisation code")
        #expect(MRZError.unknownCode(.nationality).isRetriable)
    }

    @Test func correctsAnUnknownCodeOnlyWhenOneLookalikeIsListed() throws {
        // `IPN`: of its look-alike readings only `JPN` is listed; `D<K`: only `D<<`.
        let fixed = try MRZ.correct(lines: Self.specimenWithCodes(state: "IPN", nationality: "D<K"), today: specimenDay)
        #expect(fixed.document.issuingState == "JPN")
        #expect(fixed.document.nationality == "D")
        #expect(fixed.lines == Self.specimenWithCodes(state: "JPN", nationality: "D"))
        #expect(fixed.corrections == 2)
        // `ERA` is one swap from both `FRA` and `BRA`: refused, not guessed.
        #expect(throws: MRZError.unknownCode(.issuingState)) {
            try MRZ.correct(lines: Self.specimenWithCodes(state: "ERA", nationality: "UTO"), today: specimenDay)
        }
        // `XYZ` is no swap away from any code.
        #expect(throws: MRZError.unknownCode(.nationality)) {
            try MRZ.correct(lines: Self.specimenWithCodes(state: "UTO", nationality: "XYZ"), today: specimenDay)
        }
        // A listed code is kept even when a look-alike is listed too (`PRI` is Puerto Rico, not `PRT`).
        let listed = try MRZ.correct(lines: Self.specimenWithCodes(state: "PRI", nationality: "PRT"), today: specimenDay)
        #expect(listed.document.issuingState == "PRI")
        #expect(listed.corrections == 0)
        // TD3: the passport's nationality (line 2) is corrected the same way.
        var passport = specimenTD3
        passport[1] = String(passport[1].prefix(10)) + "UTQ" + passport[1].dropFirst(13)
        #expect(try MRZ.correct(lines: passport, today: specimenDay).lines == specimenTD3)
    }

    @Test func composeRefusesUnknownCodes() throws {
        var document = try MRZ.parse(lines: specimenTD3, today: specimenDay)
        document.issuingState = "XYZ"
        #expect(throws: MRZError.unknownCode(.issuingState)) { try MRZ.compose(document) }
        document.issuingState = "D"
        #expect(try MRZ.compose(document)[0].hasPrefix("P<D<<ERIKSSON"))
        document.nationality = "IPN"
        #expect(throws: MRZError.unknownCode(.nationality)) { try MRZ.compose(document) }
    }

    @Test func keepsAnUncorrectableFieldRefused() {
        // A wrong digit that no look-alike explains: the check digit cannot confirm any reading.
        var line = Array(specimenTD1[0])
        line[6] = "6"  // D23145890 → D63145890: no single look-alike swap satisfies the check digit 7
        #expect(throws: MRZError.checkDigit(.documentNumber)) {
            try MRZ.correct(lines: [String(line), specimenTD1[1], specimenTD1[2]])
        }
    }

    @Test func refusesACorrectionTheCheckDigitLeavesAmbiguous() throws {
        // Search for a document number where one misread has two single-substitution readings that both
        // pass the check digit: correction must refuse it rather than pick one.
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789OIBSZ")
        var found: [String]?
        for _ in 0..<20_000 where found == nil {
            let number = String((0..<9).map { _ in alphabet.randomElement(using: &generator)! })
            guard let check = MRZ.checkDigit(number) else { continue }
            var lines = specimenTD3
            lines[1] = number + String(check) + String(lines[1].dropFirst(10))
            guard let composed = try? recomputeComposite(lines), (try? MRZ.parse(lines: composed, today: specimenDay)) != nil else { continue }
            // Misread one character so the check fails, then count readings one look-alike away that pass.
            for index in 0..<9 {
                var misread = Array(number)
                guard let swap = ["0": "O", "O": "0", "1": "I", "I": "1", "8": "B", "B": "8", "5": "S", "S": "5", "2": "Z", "Z": "2"][String(misread[index])] else { continue }
                misread[index] = Character(swap)
                let text = String(misread)
                let passing = Set((0..<9).flatMap { position -> [String] in
                    var candidate = Array(text)
                    guard let other = ["0": "O", "O": "0", "1": "I", "I": "1", "8": "B", "B": "8", "5": "S", "S": "5", "2": "Z", "Z": "2"][String(candidate[position])] else { return [] }
                    candidate[position] = Character(other)
                    return MRZ.checkDigit(String(candidate)) == check ? [String(candidate)] : []
                })
                if MRZ.checkDigit(text) != check, passing.count >= 2 {
                    var result = composed
                    result[1] = text + String(result[1].dropFirst(9))
                    found = result
                    break
                }
            }
        }
        let ambiguous = try #require(found)
        #expect(throws: MRZError.checkDigit(.documentNumber)) { try MRZ.correct(lines: ambiguous, today: specimenDay) }
    }

    private func recomputeComposite(_ lines: [String]) throws -> [String] {
        var line = Array(lines[1])
        let composite = String(line[0..<10]) + String(line[13..<20]) + String(line[21..<43])
        line[43] = Character(String(MRZ.checkDigit(composite)!))
        return [lines[0], String(line)]
    }

    @Test func roundTripsLongTD1DocumentNumbers() throws {
        var document = try MRZ.parse(lines: specimenTD1, today: specimenDay)
        document.documentNumber = "D23145890123"
        document.optionalData = "AB"
        let lines = try MRZ.compose(document)
        #expect(lines[0].count == 30 && Array(lines[0])[14] == "<")
        #expect(try MRZ.parse(lines: lines, today: specimenDay) == document)
    }
}

/// PyPI `mrz` as an independent implementation: it generates MRZs we must parse to the same fields, and
/// checks the MRZs we compose.
@Suite struct MRZOracleTests {
    static let script = #"""
    import json, random, sys
    from mrz.generator.td1 import TD1CodeGenerator
    from mrz.generator.td3 import TD3CodeGenerator
    from mrz.checker.td1 import TD1CodeChecker
    from mrz.checker.td3 import TD3CodeChecker
    if sys.argv[1] == "generate":
        rng = random.Random(int(sys.argv[2]))
        names = ["ANNA", "MARIA", "JOHN", "ERIKSSON", "NGUYEN", "DE LA ROS", "OBRIEN", "LI", "KARLSSON", "PIETER"]
        countries = ["UTO", "FRA", "DEU", "ESP", "NLD", "CAN", "USA", "GBR", "JPN"]
        alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        for i in range(int(sys.argv[3])):
            fmt = "TD1" if i % 2 == 0 else "TD3"
            number = "".join(rng.choice(alnum) for _ in range(rng.randint(5, 9)))
            birth = "%02d%02d%02d" % (rng.randint(0, 99), rng.randint(1, 12), rng.randint(1, 28))
            expiry = "%02d%02d%02d" % (rng.randint(26, 40), rng.randint(1, 12), rng.randint(1, 28))
            sex = rng.choice(["M", "F", "X"])
            state, nat = rng.choice(countries), rng.choice(countries)
            surname = rng.choice(names)
            given = " ".join(rng.choice(names) for _ in range(rng.randint(1, 2)))
            optional = "".join(rng.choice(alnum) for _ in range(rng.randint(0, 8)))
            if fmt == "TD1":
                code = TD1CodeGenerator("I", state, number, birth, sex, expiry, nat, surname, given, optional, force=True)
            else:
                code = TD3CodeGenerator("P", state, surname, given, number, nat, birth, sex, expiry, optional, force=True)
            print(json.dumps({"format": fmt, "mrz": str(code), "number": number, "birth": birth, "expiry": expiry,
                              "sex": sex, "state": state, "nationality": nat, "surname": surname, "given": given,
                              "optional": optional}))
    else:
        for line in sys.stdin:
            item = json.loads(line)
            checker = TD1CodeChecker if item["format"] == "TD1" else TD3CodeChecker
            print("ok" if bool(checker(item["mrz"])) else "bad " + item["mrz"].replace("\n", "|"))
    """#

    static func python(_ arguments: [String], input: String = "") throws -> String {
        guard let python = ProcessInfo.processInfo.environment["FACEGATE_TEST_PYTHON"], !python.isEmpty else {
            throw OracleError("FACEGATE_TEST_PYTHON is not set: it must name the venv python with PyPI mrz (scripts/test.sh sets it)")
        }
        let result = try ChildProcess.run(python, ["-c", script] + arguments, input: Data(input.utf8))
        guard result.exitCode == 0 else {
            throw OracleError("python mrz oracle failed: \(result.errorText)")
        }
        return String(decoding: result.output, as: UTF8.self)
    }

    struct OracleError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test func parsesWhatTheOracleGenerates() throws {
        let output = try Self.python(["generate", "20261202", "200"])
        let items = output.split(separator: "\n").map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: String] }
        #expect(items.count == 200)
        for item in items {
            let lines = item["mrz"]!.split(separator: "\n").map(String.init)
            let document = try MRZ.parse(lines: lines, today: specimenDay)
            func iso(_ yymmdd: String, birth: Bool) -> String {
                let yy = Int(yymmdd.prefix(2))!
                let recent = "\(2000 + yy)-\(yymmdd.dropFirst(2).prefix(2))-\(yymmdd.suffix(2))"
                return !birth || recent <= "2026-01-01" ? recent : "\(1900 + yy)" + recent.dropFirst(4)
            }
            #expect(document.format.rawValue == item["format"])
            #expect(document.documentNumber == item["number"])
            #expect(document.issuingState == item["state"])
            #expect(document.nationality == item["nationality"])
            #expect(document.surname == item["surname"])
            #expect(document.givenNames == item["given"])
            #expect(document.sex == item["sex"])
            #expect(document.birthDate == iso(item["birth"]!, birth: true))
            #expect(document.expiryDate == iso(item["expiry"]!, birth: false))
            #expect(document.optionalData == item["optional"])
            #expect(try MRZ.compose(document) == lines, "\(lines)")
        }
    }

    @Test func composesWhatTheOracleAccepts() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var input = ""
        for index in 0..<200 {
            let number = String((0..<Int.random(in: 4...9, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let document = MRZDocument(
                format: index % 2 == 0 ? .td1 : .td3, documentType: index % 2 == 0 ? "ID" : "P",
                issuingState: ["UTO", "FRA", "D"].randomElement(using: &generator)!, documentNumber: number,
                surname: ["ERIKSSON", "VAN DER BERG", "O'BRIEN"].randomElement(using: &generator)!,
                givenNames: ["ANNA MARIA", "JOHN", ""].randomElement(using: &generator)!,
                nationality: ["UTO", "NLD", "D"].randomElement(using: &generator)!,
                birthDate: String(format: "%04d-%02d-%02d", Int.random(in: 1950...1999, using: &generator), Int.random(in: 1...12, using: &generator), Int.random(in: 1...28, using: &generator)),
                sex: ["M", "F", "X"].randomElement(using: &generator)!,
                expiryDate: String(format: "%04d-%02d-%02d", Int.random(in: 2026...2049, using: &generator), Int.random(in: 1...12, using: &generator), Int.random(in: 1...28, using: &generator)),
                optionalData: index % 3 == 0 ? "" : "X7" + String(index))
            let lines = try MRZ.compose(document)
            #expect(try MRZ.parse(lines: lines, today: specimenDay).documentNumber == number)
            let json = try JSONSerialization.data(withJSONObject: ["format": document.format.rawValue, "mrz": lines.joined(separator: "\n")])
            input += String(decoding: json, as: UTF8.self) + "\n"
        }
        let verdicts = try Self.python(["check"], input: input).split(separator: "\n")
        #expect(verdicts.count == 200)
        #expect(verdicts.filter { $0 != "ok" }.isEmpty, "mrz refused: \(verdicts.filter { $0 != "ok" }.prefix(3))")
    }
}
