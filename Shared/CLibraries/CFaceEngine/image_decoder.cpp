// JPEG (libjpeg-turbo) and PNG (libpng) decoding of untrusted bytes, and the fe_image_* entry points.
//
// Both libraries report fatal errors through longjmp. Each setjmp sits in a function whose own locals
// are trivially destructible or owned by the caller, so a jump never skips a C++ destructor; buffers
// live in the caller's RgbImage.
#include "image_decoder.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>

#include <jpeglib.h>
// jerror.h needs JPEG_LIB_VERSION from jpeglib.h.
#include <jerror.h>
#include <png.h>

namespace faceengine {

fe_status setError(fe_error *error, fe_status code, const char *message) {
    if (error != nullptr) {
        error->code = code;
        error->width = 0;
        error->height = 0;
        std::snprintf(error->message, sizeof error->message, "%s", message != nullptr ? message : "");
    }
    return code;
}

namespace {

constexpr uint8_t kJpegMagic[3] = {0xFF, 0xD8, 0xFF};
constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
// A legitimate progressive JPEG has about ten scans; thousands of tiny scans are a known way to burn CPU.
constexpr int kMaxJpegScans = 256;
// Ceiling for one ancillary PNG chunk (iCCP, zTXt, ...) and for how many of them are kept.
constexpr png_alloc_size_t kPngChunkMallocMax = 8u << 20;
constexpr png_uint_32 kPngChunkCacheMax = 128;
constexpr uint64_t kMaxDimension = 0x7FFFFFFF;
constexpr uint64_t kDeflateMaxRatio = 1100;  // deflate's bound is 1032:1; a little slack

fe_image_format sniffFormat(const uint8_t *data, size_t size) {
    if (size >= sizeof kPngMagic && std::memcmp(data, kPngMagic, sizeof kPngMagic) == 0) return FE_FORMAT_PNG;
    if (size >= sizeof kJpegMagic && std::memcmp(data, kJpegMagic, sizeof kJpegMagic) == 0) return FE_FORMAT_JPEG;
    return FE_FORMAT_UNKNOWN;
}

bool swapsAxes(int orientation) { return orientation >= 5 && orientation <= 8; }

bool aboveCap(uint64_t width, uint64_t height, uint64_t maxPixels) {
    // Both factors are at most 2^31 - 1, so the product cannot overflow.
    return maxPixels != 0 && width * height > maxPixels;
}

fe_status tooLarge(fe_error *error, uint64_t width, uint64_t height, uint64_t maxPixels) {
    char message[160];
    std::snprintf(message, sizeof message, "image is %llux%llu pixels, above the cap of %llu pixels",
                  static_cast<unsigned long long>(width), static_cast<unsigned long long>(height),
                  static_cast<unsigned long long>(maxPixels));
    setError(error, FE_ERR_IMAGE_TOO_LARGE, message);
    if (error != nullptr) {
        error->width = static_cast<int32_t>(width > kMaxDimension ? kMaxDimension : width);
        error->height = static_cast<int32_t>(height > kMaxDimension ? kMaxDimension : height);
    }
    return FE_ERR_IMAGE_TOO_LARGE;
}

fe_status checkCap(const ImageHeader &header, uint64_t maxPixels, fe_error *error) {
    uint64_t width = static_cast<uint64_t>(header.storedWidth), height = static_cast<uint64_t>(header.storedHeight);
    if (swapsAxes(header.orientation)) std::swap(width, height);
    if (aboveCap(width, height, maxPixels)) return tooLarge(error, width, height, maxPixels);
    return FE_OK;
}

fe_status outOfMemory(fe_error *error) { return setError(error, FE_ERR_INTERNAL, "out of memory while decoding"); }

uint32_t readBigEndian32(const uint8_t *p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// ---- JPEG -------------------------------------------------------------------------------------

struct JpegErrorManager {
    jpeg_error_mgr pub;  // first member: libjpeg hands back a pointer to it
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX + 8];
};

struct JpegProgress {
    jpeg_progress_mgr pub;  // first member
    JpegErrorManager *errors;
};

[[noreturn]] void jpegFail(j_common_ptr cinfo) {
    auto *manager = reinterpret_cast<JpegErrorManager *>(cinfo->err);
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    std::snprintf(manager->message, sizeof manager->message, "JPEG: %s", text);
    longjmp(manager->jump, 1);
}

// Warnings that mean the entropy-coded data is cut short or damaged: the picture would be partly grey.
bool isDamageWarning(int code) {
    switch (code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(C_ARITH_CODING_SUPPORTED) || defined(D_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
    case JWRN_MUST_RESYNC:
        return true;
    default:
        return false;
    }
}

void jpegMessage(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    if (isDamageWarning(cinfo->err->msg_code)) jpegFail(cinfo);
    cinfo->err->num_warnings++;  // benign: extraneous bytes, unknown JFIF revision, bad ICC marker, ...
}

void jpegProgress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    auto *decompress = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (decompress->input_scan_number > kMaxJpegScans) {
        auto *progress = reinterpret_cast<JpegProgress *>(cinfo->progress);
        std::snprintf(progress->errors->message, sizeof progress->errors->message,
                      "JPEG: more than %d scans", kMaxJpegScans);
        longjmp(progress->errors->jump, 1);
    }
}

int jpegOrientation(j_decompress_ptr cinfo) {
    for (jpeg_saved_marker_ptr marker = cinfo->marker_list; marker != nullptr; marker = marker->next) {
        if (marker->marker != JPEG_APP0 + 1) continue;
        int orientation = exifOrientation(marker->data, marker->data_length);
        if (orientation != 0) return orientation;
    }
    return 1;
}

// Adobe applications write CMYK JPEGs with inverted samples; others store plain CMYK.
void cmykRowToRgb(const uint8_t *cmyk, uint8_t *rgb, long width, bool inverted) {
    for (long x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
        unsigned c = cmyk[0], m = cmyk[1], y = cmyk[2], k = cmyk[3];
        if (!inverted) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        rgb[0] = static_cast<uint8_t>((c * k + 127) / 255);
        rgb[1] = static_cast<uint8_t>((m * k + 127) / 255);
        rgb[2] = static_cast<uint8_t>((y * k + 127) / 255);
    }
}

// image == nullptr: header only.
fe_status runJpeg(const uint8_t *data, size_t size, uint64_t maxPixels, ImageHeader &header, RgbImage *image,
                  std::vector<uint8_t> &scratch, fe_error *error) {
    jpeg_decompress_struct cinfo;
    JpegErrorManager errors;
    JpegProgress progress;
    cinfo.err = jpeg_std_error(&errors.pub);
    errors.pub.error_exit = jpegFail;
    errors.pub.emit_message = jpegMessage;
    errors.message[0] = '\0';
    progress.pub.progress_monitor = jpegProgress;
    progress.errors = &errors;

    if (setjmp(errors.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return setError(error, FE_ERR_IMAGE_FORMAT, errors.message);
    }
    jpeg_create_decompress(&cinfo);
    cinfo.progress = &progress.pub;
    jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&cinfo, TRUE);

    header.format = FE_FORMAT_JPEG;
    header.storedWidth = static_cast<long>(cinfo.image_width);
    header.storedHeight = static_cast<long>(cinfo.image_height);
    header.orientation = jpegOrientation(&cinfo);
    fe_status status = checkCap(header, maxPixels, error);
    if (status != FE_OK || image == nullptr) {
        jpeg_destroy_decompress(&cinfo);
        return status;
    }

    const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    const long width = static_cast<long>(cinfo.output_width), height = static_cast<long>(cinfo.output_height);
    if (width != header.storedWidth || height != header.storedHeight || cinfo.output_components != (cmyk ? 4 : 3)) {
        jpeg_destroy_decompress(&cinfo);
        return setError(error, FE_ERR_IMAGE_FORMAT, "JPEG: unexpected output layout");
    }
    bool allocated = image->allocate(width, height);
    if (allocated && cmyk) {
        try {
            scratch.resize(static_cast<size_t>(width) * 4);
        } catch (const std::bad_alloc &) {
            allocated = false;
        }
    }
    if (!allocated) {
        jpeg_destroy_decompress(&cinfo);
        return outOfMemory(error);
    }
    const size_t stride = static_cast<size_t>(width) * 3;
    while (cinfo.output_scanline < cinfo.output_height) {
        if (cmyk) {
            JSAMPROW row = scratch.data();
            uint8_t *target = image->data() + stride * cinfo.output_scanline;
            if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
            cmykRowToRgb(scratch.data(), target, width, cinfo.saw_Adobe_marker);
        } else {
            JSAMPROW rows[16];
            JDIMENSION count = 0;
            for (; count < 16 && cinfo.output_scanline + count < cinfo.output_height; ++count)
                rows[count] = image->data() + stride * (cinfo.output_scanline + count);
            if (jpeg_read_scanlines(&cinfo, rows, count) == 0) break;
        }
    }
    if (cinfo.output_scanline != cinfo.output_height) {
        jpeg_destroy_decompress(&cinfo);
        return setError(error, FE_ERR_IMAGE_FORMAT, "JPEG: image data ended early");
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return FE_OK;
}

// ---- PNG --------------------------------------------------------------------------------------

struct PngSource {
    const uint8_t *data;
    size_t size;
    size_t offset;
};

struct PngErrors {
    char message[200];
};

void pngRead(png_structp png, png_bytep out, size_t length) {
    auto *source = static_cast<PngSource *>(png_get_io_ptr(png));
    if (length > source->size - source->offset) png_error(png, "truncated data");
    std::memcpy(out, source->data + source->offset, length);
    source->offset += length;
}

[[noreturn]] void pngFail(png_structp png, png_const_charp message) {
    auto *errors = static_cast<PngErrors *>(png_get_error_ptr(png));
    std::snprintf(errors->message, sizeof errors->message, "PNG: %s", message);
    png_longjmp(png, 1);
}

void pngWarning(png_structp, png_const_charp) {}

// The IHDR chunk must come first: signature, length 13, "IHDR", width, height.
fe_status readPngHeader(const uint8_t *data, size_t size, ImageHeader &header, fe_error *error) {
    if (size < 8 + 8 + 13) return setError(error, FE_ERR_IMAGE_FORMAT, "PNG: truncated header");
    if (readBigEndian32(data + 8) != 13 || std::memcmp(data + 12, "IHDR", 4) != 0)
        return setError(error, FE_ERR_IMAGE_FORMAT, "PNG: first chunk is not IHDR");
    const uint32_t width = readBigEndian32(data + 16), height = readBigEndian32(data + 20);
    if (width == 0 || height == 0 || width > kMaxDimension || height > kMaxDimension)
        return setError(error, FE_ERR_IMAGE_FORMAT, "PNG: invalid dimensions");
    header.format = FE_FORMAT_PNG;
    header.storedWidth = static_cast<long>(width);
    header.storedHeight = static_cast<long>(height);
    header.orientation = 1;
    header.pngBitDepth = data[24];
    header.pngColorType = data[25];
    return FE_OK;
}

// Deflate expands at most ~1032:1, so a file much shorter than its filtered rows cannot hold them.
// Checked before the pixel buffer is allocated: a few hundred bytes cannot make us allocate 120 MB.
fe_status checkPngDataVolume(const ImageHeader &header, size_t size, fe_error *error) {
    int channels;
    switch (header.pngColorType) {
    case PNG_COLOR_TYPE_GRAY: case PNG_COLOR_TYPE_PALETTE: channels = 1; break;
    case PNG_COLOR_TYPE_GRAY_ALPHA: channels = 2; break;
    case PNG_COLOR_TYPE_RGB: channels = 3; break;
    case PNG_COLOR_TYPE_RGB_ALPHA: channels = 4; break;
    default: return setError(error, FE_ERR_IMAGE_FORMAT, "PNG: invalid colour type");
    }
    if (header.pngBitDepth < 1 || header.pngBitDepth > 16) return setError(error, FE_ERR_IMAGE_FORMAT, "PNG: invalid bit depth");
    const uint64_t rowBytes = (static_cast<uint64_t>(header.storedWidth) * channels * header.pngBitDepth + 7) / 8;
    const uint64_t filtered = (rowBytes + 1) * static_cast<uint64_t>(header.storedHeight);
    if (filtered / kDeflateMaxRatio > size) return setError(error, FE_ERR_IMAGE_FORMAT, "PNG: data too short for the declared size");
    return FE_OK;
}

fe_status runPng(const uint8_t *data, size_t size, uint64_t maxPixels, ImageHeader &header, RgbImage &image,
                 fe_error *error) {
    PngErrors errors;
    errors.message[0] = '\0';
    PngSource source{data, size, 0};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &errors, pngFail, pngWarning);
    if (png == nullptr) return outOfMemory(error);
    png_infop info = png_create_info_struct(png);
    if (info == nullptr) {
        png_destroy_read_struct(&png, nullptr, nullptr);
        return outOfMemory(error);
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, nullptr);
        return setError(error, FE_ERR_IMAGE_FORMAT, errors.message);
    }
    // The cap was checked on our own IHDR parse; libpng's limits are a second fence.
    const uint64_t dimensionLimit = maxPixels < kMaxDimension ? maxPixels : kMaxDimension;
    png_set_user_limits(png, static_cast<png_uint_32>(dimensionLimit), static_cast<png_uint_32>(dimensionLimit));
    png_set_chunk_malloc_max(png, kPngChunkMallocMax);
    png_set_chunk_cache_max(png, kPngChunkCacheMax);
    png_set_read_fn(png, &source, pngRead);
    png_read_info(png, info);

    png_uint_32 width = 0, height = 0;
    int bitDepth = 0, colorType = 0;
    png_get_IHDR(png, info, &width, &height, &bitDepth, &colorType, nullptr, nullptr, nullptr);
    if (static_cast<long>(width) != header.storedWidth || static_cast<long>(height) != header.storedHeight)
        png_error(png, "IHDR changed between reads");

    // Everything becomes 8-bit RGB; alpha and tRNS transparency are dropped, not composited.
    if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (colorType == PNG_COLOR_TYPE_GRAY && bitDepth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (bitDepth == 16) png_set_strip_16(png);
    if (colorType == PNG_COLOR_TYPE_GRAY || colorType == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_strip_alpha(png);
    const int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    const size_t stride = static_cast<size_t>(width) * 3;
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 || png_get_rowbytes(png, info) != stride)
        png_error(png, "unsupported pixel layout");

    if (!image.allocate(static_cast<long>(width), static_cast<long>(height))) {
        png_destroy_read_struct(&png, &info, nullptr);
        return outOfMemory(error);
    }
    // Interlaced images are combined pass by pass in place, so every row must start out defined.
    if (passes > 1) std::memset(image.data(), 0, image.size());
    for (int pass = 0; pass < passes; ++pass)
        for (png_uint_32 y = 0; y < height; ++y) png_read_row(png, image.data() + stride * y, nullptr);
    png_read_end(png, nullptr);
    png_destroy_read_struct(&png, &info, nullptr);
    return FE_OK;
}

// ---- Orientation ------------------------------------------------------------------------------

// Rewrites the pixels so that the picture is upright as the EXIF orientation describes it.
fe_status applyOrientation(RgbImage &image, int orientation, fe_error *error) {
    if (orientation <= 1 || orientation > 8) return FE_OK;
    const long w = image.width, h = image.height;
    const long outW = swapsAxes(orientation) ? h : w, outH = swapsAxes(orientation) ? w : h;
    RgbImage rotated;
    if (!rotated.allocate(outW, outH)) return outOfMemory(error);
    const uint8_t *src = image.data();
    for (long dy = 0; dy < outH; ++dy) {
        uint8_t *row = rotated.data() + static_cast<size_t>(dy) * outW * 3;
        for (long dx = 0; dx < outW; ++dx) {
            long sx = dx, sy = dy;
            switch (orientation) {
            case 2: sx = w - 1 - dx; sy = dy; break;           // mirrored
            case 3: sx = w - 1 - dx; sy = h - 1 - dy; break;   // rotated 180°
            case 4: sx = dx; sy = h - 1 - dy; break;           // flipped
            case 5: sx = dy; sy = dx; break;                   // transposed
            case 6: sx = dy; sy = h - 1 - dx; break;           // shown turned 90° clockwise
            case 7: sx = w - 1 - dy; sy = h - 1 - dx; break;   // transversed
            case 8: sx = w - 1 - dy; sy = dx; break;           // shown turned 90° counter-clockwise
            }
            std::memcpy(row + dx * 3, src + (static_cast<size_t>(sy) * w + sx) * 3, 3);
        }
    }
    image = std::move(rotated);
    return FE_OK;
}

}  // namespace

int exifOrientation(const uint8_t *payload, size_t size) {
    static const uint8_t kExif[6] = {'E', 'x', 'i', 'f', 0, 0};
    if (payload == nullptr || size < sizeof kExif + 8 || std::memcmp(payload, kExif, sizeof kExif) != 0) return 0;
    const uint8_t *tiff = payload + sizeof kExif;
    const size_t length = size - sizeof kExif;
    bool little;
    if (tiff[0] == 'I' && tiff[1] == 'I') little = true;
    else if (tiff[0] == 'M' && tiff[1] == 'M') little = false;
    else return 0;
    auto read16 = [&](size_t at) -> uint32_t {
        return little ? uint32_t(tiff[at]) | (uint32_t(tiff[at + 1]) << 8) : (uint32_t(tiff[at]) << 8) | uint32_t(tiff[at + 1]);
    };
    auto read32 = [&](size_t at) -> uint32_t {
        return little ? read16(at) | (read16(at + 2) << 16) : (read16(at) << 16) | read16(at + 2);
    };
    if (read16(2) != 42) return 0;
    const uint64_t ifd = read32(4);
    if (ifd + 2 > length) return 0;
    const uint32_t entries = read16(static_cast<size_t>(ifd));
    for (uint32_t i = 0; i < entries; ++i) {
        const uint64_t entry = ifd + 2 + uint64_t(i) * 12;
        if (entry + 12 > length) break;
        const size_t at = static_cast<size_t>(entry);
        if (read16(at) != 0x0112) continue;
        // SHORT, count 1: the value sits in the first two bytes of the value field.
        if (read16(at + 2) != 3 || read32(at + 4) != 1) return 0;
        const uint32_t value = read16(at + 8);
        return value >= 1 && value <= 8 ? static_cast<int>(value) : 0;
    }
    return 0;
}

fe_status probeImage(const uint8_t *data, size_t size, uint64_t maxPixels, ImageHeader &header, fe_error *error) {
    if (data == nullptr && size != 0) return setError(error, FE_ERR_INVALID_ARGUMENT, "no image data");
    switch (sniffFormat(data, size)) {
    case FE_FORMAT_PNG: {
        fe_status status = readPngHeader(data, size, header, error);
        return status == FE_OK ? checkCap(header, maxPixels, error) : status;
    }
    case FE_FORMAT_JPEG: {
        std::vector<uint8_t> unused;
        return runJpeg(data, size, maxPixels, header, nullptr, unused, error);
    }
    default:
        return setError(error, FE_ERR_IMAGE_FORMAT, size == 0 ? "empty image" : "not a JPEG or PNG image");
    }
}

fe_status decodeImage(const uint8_t *data, size_t size, uint64_t maxPixels, RgbImage &image, fe_error *error) {
    if (maxPixels == 0) maxPixels = FE_DEFAULT_MAX_PIXELS;
    if (data == nullptr && size != 0) return setError(error, FE_ERR_INVALID_ARGUMENT, "no image data");
    ImageHeader header;
    fe_status status;
    switch (sniffFormat(data, size)) {
    case FE_FORMAT_PNG:
        status = readPngHeader(data, size, header, error);
        if (status == FE_OK) status = checkCap(header, maxPixels, error);
        if (status == FE_OK) status = checkPngDataVolume(header, size, error);
        if (status == FE_OK) status = runPng(data, size, maxPixels, header, image, error);
        break;
    case FE_FORMAT_JPEG: {
        std::vector<uint8_t> scratch;
        status = runJpeg(data, size, maxPixels, header, &image, scratch, error);
        break;
    }
    default:
        return setError(error, FE_ERR_IMAGE_FORMAT, size == 0 ? "empty image" : "not a JPEG or PNG image");
    }
    if (status == FE_OK) status = applyOrientation(image, header.orientation, error);
    if (status != FE_OK) image = RgbImage();
    return status;
}

}  // namespace faceengine

// ---- C entry points -----------------------------------------------------------------------------

namespace {

template <typename Body> fe_status guardedDecode(fe_error *error, Body body) {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return faceengine::setError(error, FE_ERR_INTERNAL, "out of memory while decoding");
    } catch (...) {
        return faceengine::setError(error, FE_ERR_INTERNAL, "unexpected failure while decoding");
    }
}

}  // namespace

extern "C" {

int32_t fe_image_probe(const uint8_t *data, size_t size, uint64_t max_pixels, fe_image_info *info, fe_error *error) {
    if (info == nullptr) return faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "info is NULL");
    return guardedDecode(error, [&]() -> fe_status {
        faceengine::ImageHeader header;
        const fe_status status = faceengine::probeImage(data, size, max_pixels, header, error);
        if (status != FE_OK) return status;
        const bool swapped = header.orientation >= 5;
        info->format = header.format;
        info->width = static_cast<int32_t>(swapped ? header.storedHeight : header.storedWidth);
        info->height = static_cast<int32_t>(swapped ? header.storedWidth : header.storedHeight);
        info->orientation = header.orientation;
        return FE_OK;
    });
}

int32_t fe_image_decode(const uint8_t *data, size_t size, uint64_t max_pixels, fe_rgb_image *image, fe_error *error) {
    if (image == nullptr) return faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "image is NULL");
    image->width = image->height = 0;
    image->pixels = nullptr;
    return guardedDecode(error, [&]() -> fe_status {
        faceengine::RgbImage decoded;
        const fe_status status = faceengine::decodeImage(data, size, max_pixels, decoded, error);
        if (status != FE_OK) return status;
        image->width = static_cast<int32_t>(decoded.width);
        image->height = static_cast<int32_t>(decoded.height);
        image->pixels = decoded.release();
        return FE_OK;
    });
}

void fe_rgb_image_free(fe_rgb_image *image) {
    if (image == nullptr) return;
    std::free(image->pixels);
    image->pixels = nullptr;
}

}  // extern "C"
