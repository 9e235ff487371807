internal import CFaceEngine

/// Reads an image's header only: magic bytes, dimensions, EXIF orientation. No pixels are allocated,
/// so it is cheap enough to run on a request path before queueing work.
public enum ImageProbe {
    /// - Returns: `format` is `"jpeg"` or `"png"`; `width` and `height` are those of the upright image
    ///   (a JPEG with EXIF orientation 5–8 reports its stored height as width).
    public static func inspect(_ bytes: [UInt8]) throws(FaceEngineError) -> (format: String, width: Int, height: Int) {
        var info = fe_image_info()
        var error = fe_error()
        let status = bytes.withUnsafeBufferPointer { buffer in
            fe_image_probe(buffer.baseAddress, buffer.count, 0, &info, &error)
        }
        guard status == Int32(FE_OK.rawValue) else { throw FaceEngineError(error) }
        let format = UInt32(bitPattern: info.format) == FE_FORMAT_PNG.rawValue ? "png" : "jpeg"
        return (format, Int(info.width), Int(info.height))
    }
}

/// Decoded upright 8-bit RGB pixels (row-major, R G B), under the same limits as the engine's decoder.
/// Internal: services only need analyses; the tests compare decoded pixels.
func decodeRGB(_ bytes: [UInt8], maxPixels: Int) throws(FaceEngineError) -> (width: Int, height: Int, pixels: [UInt8]) {
    var image = fe_rgb_image()
    var error = fe_error()
    let status = bytes.withUnsafeBufferPointer { buffer in
        fe_image_decode(buffer.baseAddress, buffer.count, UInt64(max(0, maxPixels)), &image, &error)
    }
    guard status == Int32(FE_OK.rawValue) else { throw FaceEngineError(error) }
    defer { fe_rgb_image_free(&image) }
    let count = Int(image.width) * Int(image.height) * 3
    return (Int(image.width), Int(image.height), Array(UnsafeBufferPointer(start: image.pixels, count: count)))
}

/// How many values of the SFace engine's area reduction of `region` of decoded pixels to `width` × `height` differ from
/// OpenCV's `cv::resize` with INTER_AREA; nil for a region outside the image or a target larger than it. Internal: the
/// tests hold the engine's faster reduction to OpenCV's, value for value.
func areaReductionDifferences(_ image: (width: Int, height: Int, pixels: [UInt8]), region: FaceBox, width: Int, height: Int) -> Int? {
    AreaReduction.compare(image, region: region, width: width, height: height, repeats: 0).map(\.differences)
}

/// The SFace engine's area reduction beside OpenCV's INTER_AREA, for `facegate-bench area-reduction`.
public enum AreaReduction {
    /// A photo's decoded pixels (upright RGB).
    public static func decode(_ bytes: [UInt8]) throws(FaceEngineError) -> (width: Int, height: Int, pixels: [UInt8]) {
        try decodeRGB(bytes, maxPixels: 0)
    }

    /// `region` of `image` reduced to `width` × `height` by both: the values that differ and, with `repeats`, the median
    /// milliseconds of each on one thread, run in turn. nil for a region outside the image or a target larger than it.
    public static func compare(_ image: (width: Int, height: Int, pixels: [UInt8]), region: FaceBox, width: Int, height: Int,
                               repeats: Int) -> (differences: Int, engineMilliseconds: Double, openCVMilliseconds: Double)? {
        var engine = 0.0, openCV = 0.0
        let differences = image.pixels.withUnsafeBufferPointer { buffer in
            fe_area_reduction_compare(buffer.baseAddress, Int32(clamping: image.width), Int32(clamping: image.height),
                                      Int32(clamping: region.left), Int32(clamping: region.top), Int32(clamping: region.width),
                                      Int32(clamping: region.height), Int32(clamping: width), Int32(clamping: height),
                                      Int32(clamping: repeats), &engine, &openCV)
        }
        return differences < 0 ? nil : (Int(differences), engine, openCV)
    }
}
