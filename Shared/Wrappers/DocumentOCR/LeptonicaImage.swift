internal import CTesseract

/// A leptonica image (8-bit grey once loaded) owned by this object and destroyed with it.
final class LeptonicaImage {
    let pix: UnsafeMutablePointer<PIX>

    private init(taking pix: UnsafeMutablePointer<PIX>) { self.pix = pix }

    deinit {
        var pointer: UnsafeMutablePointer<PIX>? = pix
        pixDestroy(&pointer)
    }

    var width: Int { Int(pixGetWidth(pix)) }
    var height: Int { Int(pixGetHeight(pix)) }

    /// Format and size from the file header, without decoding the pixels.
    struct Header {
        var isJPEG: Bool
        var isPNG: Bool
        var width: Int
        var height: Int
    }

    static func header(of bytes: [UInt8]) -> Header? {
        var format: Int32 = 0, width: Int32 = 0, height: Int32 = 0, bps: Int32 = 0, spp: Int32 = 0, colormap: Int32 = 0
        let status = bytes.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return 1 }
            return pixReadHeaderMem(base, buffer.count, &format, &width, &height, &bps, &spp, &colormap)
        }
        guard status == 0, width > 0, height > 0 else { return nil }
        return Header(isJPEG: format == Int32(IFF_JFIF_JPEG), isPNG: format == Int32(IFF_PNG),
                      width: Int(width), height: Int(height))
    }

    /// Decodes a JPEG or PNG into 8-bit grey. A JPEG that libjpeg had to patch (cut short, corrupt) is refused:
    /// libjpeg would otherwise fill the missing part with grey and return an image.
    static func decodeGrey(_ bytes: [UInt8], header: Header) -> LeptonicaImage? {
        let decoded: UnsafeMutablePointer<PIX>? = bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            if header.isJPEG {
                var warnings: Int32 = 0
                let pix = pixReadMemJpeg(base, buffer.count, 0, 1, &warnings, 0)
                if warnings > 0, var broken = Optional(pix) {
                    pixDestroy(&broken)
                    return nil
                }
                return pix
            }
            return pixReadMemPng(base, buffer.count)
        }
        guard let decoded else { return nil }
        let source = LeptonicaImage(taking: decoded)
        guard let grey = pixConvertTo8(source.pix, 0) else { return nil }
        return LeptonicaImage(taking: grey)
    }

    /// Whether the ink in this box has the shape of OCR-B's filler `<`: a chevron whose left quarter is inked
    /// only around the middle and whose right quarter only at the top and bottom (the two arm ends). Tesseract
    /// reads the chevron as `K`, `S`, `E` or `5` in noisy filler runs; heights alone cannot tell them apart
    /// (the chevron is 90 % of the cap height), and no letter or digit has both of these empty regions.
    func looksLikeChevron(left: Int, top: Int, right: Int, bottom: Int) -> Bool {
        let width = right - left, height = bottom - top
        guard width >= 6, height >= 8, left >= 0, top >= 0, right <= self.width, bottom <= self.height else { return false }
        let depth = pixGetDepth(pix)
        var values = [[UInt32]](repeating: [UInt32](repeating: 0, count: width), count: height)
        for y in 0..<height {
            for x in 0..<width {
                var value: UInt32 = 0
                pixGetPixel(pix, Int32(left + x), Int32(top + y), &value)
                values[y][x] = value
            }
        }
        let isInk: (UInt32) -> Bool
        if depth == 1 {
            isInk = { $0 == 1 }
        } else {
            let all = values.flatMap { $0 }
            guard let darkest = all.min(), let lightest = all.max(), lightest > darkest + 40 else { return false }
            let threshold = (darkest + lightest) / 2
            isInk = { $0 < threshold }
        }
        func ink(_ columns: Range<Int>, _ rows: Range<Int>) -> Double {
            var count = 0
            for y in rows { for x in columns where isInk(values[y][x]) { count += 1 } }
            return Double(count) / Double(max(1, columns.count * rows.count))
        }
        let quarter = max(1, width / 4)
        let leftColumns = 0..<quarter, rightColumns = (width - quarter)..<width
        let topRows = 0..<(height / 4), bottomRows = (height - height / 4)..<height
        let middleRows = (height * 35 / 100)..<(height * 65 / 100)
        return ink(leftColumns, topRows) < 0.05 && ink(leftColumns, bottomRows) < 0.05 && ink(leftColumns, middleRows) > 0.1
            && ink(rightColumns, middleRows) < 0.05 && ink(rightColumns, topRows) > 0.05 && ink(rightColumns, bottomRows) > 0.05
    }

    /// A copy turned level: a photo a few degrees off makes tesseract read filler runs as noise.
    /// Leptonica returns a plain copy when it finds no confident skew.
    func deskewed() -> LeptonicaImage? {
        guard let level = pixDeskew(pix, 0) else { return nil }
        return LeptonicaImage(taking: level)
    }

    /// A copy with a 3×3 median filter: removes sensor noise that tesseract reads as glyphs in filler runs.
    func denoised() -> LeptonicaImage? {
        guard let smooth = pixMedianFilter(pix, 3, 3) else { return nil }
        return LeptonicaImage(taking: smooth)
    }

    /// A copy scaled by `factor` with linear interpolation.
    func scaled(by factor: Float) -> LeptonicaImage? {
        guard let scaled = pixScaleGrayLI(pix, factor, factor) else { return nil }
        return LeptonicaImage(taking: scaled)
    }

    /// A copy with local contrast normalised and binarised (Otsu on tiles), for uneven light and noise.
    func binarized() -> LeptonicaImage? {
        guard let normalized = pixContrastNorm(nil, pix, 100, 100, 45, 2, 2) else { return nil }
        let owner = LeptonicaImage(taking: normalized)
        var binary: UnsafeMutablePointer<PIX>?
        guard pixOtsuAdaptiveThreshold(owner.pix, 2000, 2000, 0, 0, 0.1, nil, &binary) == 0, let binary else { return nil }
        return LeptonicaImage(taking: binary)
    }

    /// A copy with edges sharpened (unsharp masking), which counters mild blur.
    func sharpened() -> LeptonicaImage? {
        guard let sharp = pixUnsharpMaskingGray(pix, 2, 0.6) else { return nil }
        return LeptonicaImage(taking: sharp)
    }
}
