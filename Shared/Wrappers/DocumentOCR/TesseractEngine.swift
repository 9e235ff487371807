internal import CTesseract
import Foundation

/// One recognised glyph: its text, ink box (image pixels) and the engine's confidence (0–100).
struct Glyph: Equatable {
    var character: Character
    var left: Int
    var top: Int
    var right: Int
    var bottom: Int
    var confidence: Float

    var centerX: Double { Double(left + right) / 2 }
    var height: Int { bottom - top }
}

/// One text line as laid out by tesseract: its box and glyphs in reading order.
struct RecognizedLine {
    var left: Int
    var top: Int
    var right: Int
    var bottom: Int
    var glyphs: [Glyph]

    var text: String { String(glyphs.map(\.character)) }

    /// The median height of the line's letters and digits (the filler `<` is shorter).
    var capHeight: Int {
        let letters = glyphs.filter { $0.character != "<" }.map(\.height).sorted()
        let heights = letters.isEmpty ? glyphs.map(\.height).sorted() : letters
        return heights.isEmpty ? 0 : heights[heights.count / 2]
    }
}

/// A tesseract handle, initialised for the MRZ alphabet. Not thread-safe: the reader's pool lends it to
/// one job at a time, on the handle's own thread.
final class TesseractEngine {
    private let handle: OpaquePointer

    /// `status` is tesseract's Init return code when it fails.
    init(tessdataPath: String?, languages: String) throws(MRZReadError) {
        guard let handle = TessBaseAPICreate() else { throw .engineUnavailable(status: -1) }
        self.handle = handle
        // Keep tesseract's "Estimating resolution" and similar notes out of the service's stderr.
        TessBaseAPISetVariable(handle, "debug_file", "/dev/null")
        let status = TessBaseAPIInit3(handle, tessdataPath, languages)
        guard status == 0 else {
            // deinit runs End + Delete for the handle this initialiser created.
            throw .engineUnavailable(status: Int(status))
        }
        TessBaseAPISetVariable(handle, "tessedit_char_whitelist", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<")
        // The MRZ is not language: dictionaries would only pull readings towards English words.
        TessBaseAPISetVariable(handle, "load_system_dawg", "0")
        TessBaseAPISetVariable(handle, "load_freq_dawg", "0")
    }

    deinit {
        TessBaseAPIEnd(handle)
        TessBaseAPIDelete(handle)
    }

    enum Layout {
        /// One uniform block of text (PSM 6).
        case block
        /// Sparse text in no particular order (PSM 11).
        case sparse
        /// Automatic page segmentation without orientation detection (PSM 3).
        case auto
    }

    /// Recognises one character in a box of `image` (a cell the line recognition left empty).
    func recognizeCharacter(_ image: LeptonicaImage, left: Int, top: Int, width: Int, height: Int) -> Character? {
        defer { TessBaseAPIClear(handle) }
        let x = max(0, left), y = max(0, top)
        let w = min(image.width - x, width), h = min(image.height - y, height)
        guard w > 2, h > 2 else { return nil }
        TessBaseAPISetPageSegMode(handle, PSM_SINGLE_CHAR)
        TessBaseAPISetImage2(handle, image.pix)
        TessBaseAPISetSourceResolution(handle, 300)
        TessBaseAPISetRectangle(handle, Int32(x), Int32(y), Int32(w), Int32(h))
        guard let text = TessBaseAPIGetUTF8Text(handle) else { return nil }
        defer { TessDeleteText(text) }
        let value = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return value.count == 1 ? value.first : nil
    }

    /// Recognises `region` of `image` (all of it when nil) and returns its text lines with glyph boxes,
    /// in the image's coordinates.
    func recognize(_ image: LeptonicaImage, region: (left: Int, top: Int, width: Int, height: Int)?, layout: Layout)
        -> [RecognizedLine]
    {
        defer { TessBaseAPIClear(handle) }
        let mode: TessPageSegMode = switch layout {
        case .block: PSM_SINGLE_BLOCK
        case .sparse: PSM_SPARSE_TEXT
        case .auto: PSM_AUTO
        }
        TessBaseAPISetPageSegMode(handle, mode)
        TessBaseAPISetImage2(handle, image.pix)
        TessBaseAPISetSourceResolution(handle, 300)
        if let region {
            TessBaseAPISetRectangle(handle, Int32(region.left), Int32(region.top), Int32(region.width), Int32(region.height))
        }
        guard TessBaseAPIRecognize(handle, nil) == 0, let iterator = TessBaseAPIGetIterator(handle) else { return [] }
        defer { TessResultIteratorDelete(iterator) }
        let page = TessResultIteratorGetPageIterator(iterator)

        var lines: [RecognizedLine] = []
        var current: RecognizedLine?
        repeat {
            if TessPageIteratorIsAtBeginningOf(page, RIL_TEXTLINE) != 0 {
                if let line = current { lines.append(line) }
                var left: Int32 = 0, top: Int32 = 0, right: Int32 = 0, bottom: Int32 = 0
                TessPageIteratorBoundingBox(page, RIL_TEXTLINE, &left, &top, &right, &bottom)
                current = RecognizedLine(left: Int(left), top: Int(top), right: Int(right), bottom: Int(bottom), glyphs: [])
            }
            guard let text = TessResultIteratorGetUTF8Text(iterator, RIL_SYMBOL) else { continue }
            let symbol = String(cString: text)
            TessDeleteText(text)
            var left: Int32 = 0, top: Int32 = 0, right: Int32 = 0, bottom: Int32 = 0
            guard TessPageIteratorBoundingBox(page, RIL_SYMBOL, &left, &top, &right, &bottom) != 0,
                  let character = symbol.first, symbol.count == 1 else { continue }
            let confidence = TessResultIteratorConfidence(iterator, RIL_SYMBOL)
            current?.glyphs.append(Glyph(character: character, left: Int(left), top: Int(top), right: Int(right),
                                         bottom: Int(bottom), confidence: confidence))
        } while TessResultIteratorNext(iterator, RIL_SYMBOL) != 0
        if let line = current { lines.append(line) }
        return lines
    }
}
