import Crypto
import FaceGateCore
import Foundation
import Synchronization
import Testing

@Suite struct CTIDEnvelopeTests {
    static let exampleKey = Array(0..<16).map(UInt8.init)
    static let exampleIV = Array(16..<32).map(UInt8.init)
    static let examplePlaintext = #"{"bizSerialNum":"0123456789abcdef0123456789abcdef","randNum":"483920"}"#
    static let exampleAppId = UUID(uuidString: "6f1c2d3e-0000-4000-8000-000000000001")!

    /// The worked example printed in the README: a third party can check an implementation against it.
    @Test func sealsTheWorkedExampleToTheDocumentedBytes() throws {
        #expect(try CTIDEnvelope.macKey(for: Self.exampleKey) == hex("c24ff5f80d8bd8e6608850bcb088ab5ff5d4d59b4d1d99e435e9240a31db41d8"))
        let envelope = try CTIDEnvelope.seal(Array(Self.examplePlaintext.utf8), appId: Self.exampleAppId, key: Self.exampleKey, iv: Self.exampleIV)
        #expect(envelope.version == "v1")
        #expect(envelope.appId == "6f1c2d3e-0000-4000-8000-000000000001")
        #expect(envelope.iv == "EBESExQVFhcYGRobHB0eHw==")
        #expect(envelope.data == "HxS4SnjdMhLCp1nssqycq9NdqC5FHsZZt1VVg274civHmlCaUdp7n7mpi6GMkcun0kOurW9hdmZG/ki4UxkEhm/AC8uXIdAX8T9zE7PpyFM=")
        #expect(envelope.mac == "DFEumrdGktimvIfzGD54fe/StBBmiQxSByaW+Eg2DAE=")
        let opened = try envelope.open(expectedAppId: Self.exampleAppId, key: Self.exampleKey)
        #expect(String(decoding: opened, as: UTF8.self) == Self.examplePlaintext)
    }

    @Test func freshSealsUseFreshIVs() throws {
        let key = SecureRandom.bytes(16)
        let a = try CTIDEnvelope.seal(Array("same".utf8), appId: Self.exampleAppId, key: key)
        let b = try CTIDEnvelope.seal(Array("same".utf8), appId: Self.exampleAppId, key: key)
        #expect(a.iv != b.iv)
        #expect(a.data != b.data)
        #expect(try a.open(expectedAppId: Self.exampleAppId, key: key) == Array("same".utf8))
    }

    /// Every tamper gives the one error, and the decryption routine is never reached.
    @Test func everyTamperFailsIdenticallyBeforeDecryption() throws {
        let key = SecureRandom.bytes(16)
        let app = UUID()
        let good = try CTIDEnvelope.seal(Array(Self.examplePlaintext.utf8), appId: app, key: key)
        func flipped(_ base64: String, at index: Int = 0) -> String {
            var bytes = Array(Data(base64Encoded: base64)!)
            bytes[index] ^= 0x01
            return Data(bytes).base64EncodedString()
        }
        func truncated(_ base64: String, by count: Int) -> String {
            Data(Array(Data(base64Encoded: base64)!).dropLast(count)).base64EncodedString()
        }
        var cases: [(String, CTIDEnvelope, [UInt8], UUID)] = []
        var e = good; e.data = flipped(good.data, at: 5); cases.append(("ciphertext", e, key, app))
        e = good; e.data = flipped(good.data, at: Array(Data(base64Encoded: good.data)!).count - 1); cases.append(("last block", e, key, app))
        e = good; e.iv = flipped(good.iv); cases.append(("iv", e, key, app))
        e = good; e.mac = flipped(good.mac, at: 31); cases.append(("mac", e, key, app))
        e = good; e.mac = truncated(good.mac, by: 1); cases.append(("short mac", e, key, app))
        e = good; e.data = truncated(good.data, by: 16); cases.append(("truncated ciphertext", e, key, app))
        e = good; e.data = truncated(good.data, by: 3); cases.append(("ragged ciphertext", e, key, app))
        e = good; e.data = ""; cases.append(("empty ciphertext", e, key, app))
        e = good; e.iv = "not base64!"; cases.append(("iv not base64", e, key, app))
        e = good; e.version = "v2"; cases.append(("version", e, key, app))
        e = good; e.appId = UUID().uuidString.lowercased(); cases.append(("appId in envelope", e, key, app))
        cases.append(("expected app", good, key, UUID()))
        cases.append(("wrong key", good, SecureRandom.bytes(16), app))
        cases.append(("short key", good, SecureRandom.bytes(15), app))

        for (label, envelope, key, expected) in cases {
            let decryptions = Atomic<Int>(0)
            do {
                _ = try envelope.open(expectedAppId: expected, key: key) { key, iv, ciphertext in
                    decryptions.add(1, ordering: .relaxed)
                    return try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext)
                }
                Issue.record("\(label): a tampered envelope opened")
            } catch {
                #expect(error == .invalid, "\(label)")
                #expect(error.description == CTIDEnvelopeError.message, "\(label)")
            }
            #expect(decryptions.load(ordering: .relaxed) == 0, "\(label): decryption ran before the tag was checked")
        }

        // The untouched envelope does reach decryption exactly once.
        let decryptions = Atomic<Int>(0)
        _ = try good.open(expectedAppId: app, key: key) { key, iv, ciphertext in
            decryptions.add(1, ordering: .relaxed)
            return try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext)
        }
        #expect(decryptions.load(ordering: .relaxed) == 1)
    }

    func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}

@Suite struct ResidentIDNumberTests {
    static let today = ISO8601DateFormatter().date(from: "2026-06-01T00:00:00Z")!

    @Test func acceptsValidNumbersIncludingCheckX() throws {
        // 11010519491231002X: the GB 11643 worked example (check character X).
        let id = try ResidentIDNumber("11010519491231002X", today: Self.today)
        #expect(id.birthYear == 1949 && id.birthMonth == 12 && id.birthDay == 31)
        #expect(id.masked == "1101**********002X")
        #expect(try ResidentIDNumber("11010519491231002x", today: Self.today).value == "11010519491231002X")
        #expect(ResidentIDNumber.checkCharacter(for: Array("44052418800101001".utf8)) == "4")
        _ = try ResidentIDNumber("440524188001010014", today: Self.today)
    }

    @Test func refusesWrongCheckDigitsFormatsAndImpossibleBirthDates() throws {
        #expect(throws: ResidentIDNumber.Problem.checkDigit) { try ResidentIDNumber("110105194912310021", today: Self.today) }
        #expect(throws: ResidentIDNumber.Problem.format) { try ResidentIDNumber("11010519491231002", today: Self.today) }
        #expect(throws: ResidentIDNumber.Problem.format) { try ResidentIDNumber("1101051949123100X2", today: Self.today) }
        #expect(throws: ResidentIDNumber.Problem.format) { try ResidentIDNumber("11010519491231002Y", today: Self.today) }
        for body in ["11010519490230123", "11010519491301123", "11010519000229123", "11010520300101123"] {
            let number = body + String(ResidentIDNumber.checkCharacter(for: Array(body.utf8)))
            #expect(throws: ResidentIDNumber.Problem.birthDate, "\(number)") { try ResidentIDNumber(number, today: Self.today) }
        }
        // 2000 was a leap year.
        let leap = "11010520000229123"
        _ = try ResidentIDNumber(leap + String(ResidentIDNumber.checkCharacter(for: Array(leap.utf8))), today: Self.today)
    }

    @Test func parsesAndOrdersCalendarDates() {
        #expect(CalendarDate(yyyymmdd: "20240229") != nil)
        #expect(CalendarDate(yyyymmdd: "20230229") == nil)
        #expect(CalendarDate(yyyymmdd: "2024-02-2") == nil)
        #expect(CalendarDate(yyyymmdd: "20240101")! < CalendarDate(yyyymmdd: "20240102")!)
        #expect(CalendarDate(yyyymmdd: "20240101")!.description == "20240101")
    }
}
