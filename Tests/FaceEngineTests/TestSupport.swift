import FaceGateTestSupport
import Foundation
import Testing
@testable import FaceEngine

/// Paths the Makefile provides; a test fails with a clear message when one is missing.
enum TestEnvironment {
    static func imageDirectory() throws -> String {
        try #require(
            ProcessInfo.processInfo.environment["FACEGATE_TEST_IMAGES"],
            "FACEGATE_TEST_IMAGES is not set: point it at the face photos (obama.jpg, biden.jpg, 32bit.png, ...)")
    }

    static func modelDirectory() throws -> String {
        try #require(
            ProcessInfo.processInfo.environment["FACEGATE_MODEL_DIR"],
            "FACEGATE_MODEL_DIR is not set: point it at the dlib models (shape_predictor_*.dat, dlib_face_recognition_resnet_model_v1.dat)")
    }

    static func photo(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: try imageDirectory() + "/" + name)))
    }

    static func configuration() throws -> FaceEngineConfiguration {
        FaceEngineConfiguration(modelDirectory: try modelDirectory())
    }

    static func engine(_ adjust: (inout FaceEngineConfiguration) -> Void = { _ in }) throws -> FaceEngine {
        var configuration = try configuration()
        adjust(&configuration)
        return try FaceEngine(configuration: configuration)
    }
}

/// A temporary directory for images made by ImageMagick, removed afterwards.
struct ScratchDirectory: ~Copyable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "face-engine-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func read(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: file(name)))) }

    /// Runs ImageMagick's `convert` with the given arguments.
    func convert(_ arguments: [String]) throws {
        let result = try ChildProcess.run("convert", arguments)
        if result.exitCode != 0 {
            Issue.record("convert \(arguments.joined(separator: " ")) failed: \(result.errorText)")
            throw CancellationError()
        }
    }
}

/// Resident and peak resident memory of this process, from /proc/self/status, in kB.
func residentMemory() -> (current: Int, peak: Int) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
        }
        return 0
    }
    return (field("VmRSS"), field("VmHWM"))
}

/// Resets the peak resident set size (VmHWM) so that a later reading covers only what follows.
func resetPeakMemory() -> Bool {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
    defer { try? handle.close() }
    return (try? handle.write(contentsOf: Data("5".utf8))) != nil
}

/// CRC-32 (PNG's chunk checksum).
func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

func bigEndian32(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
}

/// A PNG chunk: length, type, data, CRC over type and data.
func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let body = Array(type.utf8) + data
    return bigEndian32(UInt32(data.count)) + body + bigEndian32(crc32(body))
}

/// A well-formed PNG signature and IHDR announcing `width` × `height` 8-bit RGB, a tiny IDAT, IEND.
func pngHeader(width: UInt32, height: UInt32) -> [UInt8] {
    let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    let ihdr = bigEndian32(width) + bigEndian32(height) + [8, 2, 0, 0, 0]
    let idat: [UInt8] = [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]
    return signature + pngChunk("IHDR", ihdr) + pngChunk("IDAT", idat) + pngChunk("IEND", [])
}

/// An APP1 Exif segment holding only IFD0 with the orientation tag, in either TIFF byte order.
func exifOrientationSegment(_ orientation: UInt16, bigEndian: Bool) -> [UInt8] {
    func u16(_ v: UInt16) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)] }
    func u32(_ v: UInt32) -> [UInt8] { bigEndian ? bigEndian32(v) : bigEndian32(v).reversed() }
    var tiff: [UInt8] = bigEndian ? Array("MM".utf8) : Array("II".utf8)
    tiff += u16(42) + u32(8)                 // magic, IFD0 at offset 8
    tiff += u16(1)                           // one entry
    tiff += u16(0x0112) + u16(3) + u32(1)    // Orientation, SHORT, count 1
    tiff += u16(orientation) + [0, 0]        // value, padded to four bytes
    tiff += u32(0)                           // no next IFD
    let payload = Array("Exif".utf8) + [0, 0] + tiff
    let length = UInt16(payload.count + 2)
    return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
}

/// Offset of the first SOF0/SOF1/SOF2 marker, found by walking the marker segments (an EXIF thumbnail
/// inside APP1 has a frame header of its own, so a byte search is not enough).
func jpegFrameHeaderOffset(_ jpeg: [UInt8]) -> Int? {
    var offset = 2
    while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF {
        let marker = jpeg[offset + 1]
        if marker == 0xC0 || marker == 0xC1 || marker == 0xC2 { return offset }
        if marker == 0xDA { return nil }
        offset += 2 + (Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3]))
    }
    return nil
}

/// Inserts `segment` right after the JPEG's SOI marker.
func insertingAfterSOI(_ jpeg: [UInt8], _ segment: [UInt8]) -> [UInt8] {
    Array(jpeg[0..<2]) + segment + Array(jpeg[2...])
}

/// Decoded RGB pixels through the C decoder, for pixel-level checks.
func decodePixels(_ bytes: [UInt8]) throws -> (width: Int, height: Int, pixels: [UInt8]) {
    try decodeRGB(bytes, maxPixels: 40_000_000)
}
