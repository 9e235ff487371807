import FaceGateCore
import Foundation

/// `facegate-bench ctid [--iterations N]`: the CTID envelope on one core — seal and open of a
/// verification request without and with a portrait, and how fast forged envelopes are refused
/// (tag check only, no decryption). Peer: Benchmarks/peers/ctid_envelope_peer.py (Python `cryptography`).
func runCTIDBenchmark(arguments: [String]) async throws {
    var iterations = 20_000
    if let index = arguments.firstIndex(of: "--iterations"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
        iterations = max(100, value)
    }
    let key = (0..<16).map { _ in UInt8.random(in: 0...255) }
    let appId = UUID()
    let small = try FaceGateJSON.encode(CTIDVerificationRequest(
        bizSerialNum: "0123456789abcdef0123456789abcdef", randNum: "483920", idNumber: "11010519491231002X", name: "张三",
        validDateStart: "20200101", validDateEnd: "20400101"))
    let photo = try FaceGateJSON.encode(CTIDVerificationRequest(
        bizSerialNum: "0123456789abcdef0123456789abcdef", randNum: "483920", idNumber: "11010519491231002X", name: "张三",
        photoData: Data((0..<30_000).map { _ in UInt8.random(in: 0...255) })))

    func measure(_ label: String, count: Int, _ body: () throws -> Void) rethrows -> String {
        for _ in 0..<min(count / 10, 1000) { try body() }  // warm-up
        let start = ContinuousClock.now
        for _ in 0..<count { try body() }
        let seconds = (ContinuousClock.now - start).seconds
        return String(format: "| %@ | %d | %.1f | %.0f |", label, count, seconds / Double(count) * 1_000_000, Double(count) / seconds)
    }

    var rows: [String] = []
    let sealedSmall = try CTIDEnvelope.seal(small, appId: appId, key: key)
    let sealedPhoto = try CTIDEnvelope.seal(photo, appId: appId, key: key)
    var forged = sealedSmall
    var tag = Array(Data(base64Encoded: forged.mac)!)
    tag[0] ^= 1
    forged.mac = Data(tag).base64EncodedString()

    rows.append(try measure("seal, \(small.count) B request", count: iterations) { _ = try CTIDEnvelope.seal(small, appId: appId, key: key) })
    rows.append(try measure("open, \(small.count) B request", count: iterations) { _ = try sealedSmall.open(expectedAppId: appId, key: key) })
    rows.append(try measure("seal, \(photo.count) B request with photo", count: iterations / 10) { _ = try CTIDEnvelope.seal(photo, appId: appId, key: key) })
    rows.append(try measure("open, \(photo.count) B request with photo", count: iterations / 10) { _ = try sealedPhoto.open(expectedAppId: appId, key: key) })
    rows.append(measure("refuse forged tag, \(small.count) B", count: iterations) { _ = try? forged.open(expectedAppId: appId, key: key) })
    rows.append(try measure("ResidentIDNumber parse + check", count: iterations) { _ = try ResidentIDNumber("11010519491231002X") })

    let body = """
    Swift, one thread, `CTIDEnvelope` over OpenSSL 3 (AES-128-CBC, HKDF and HMAC-SHA256 per call, base64 and JSON excluded
    from the plaintext but included in the envelope fields). Load average \(Bench.loadAverage()).

    | operation | iterations | µs per op | ops/s |
    | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))
    """
    try Bench.record("CTID envelope (`facegate-bench ctid`)", body)
}
