// Decoding of untrusted JPEG / PNG bytes into packed 8-bit RGB, under a pixel cap.
// Independent of dlib so that the fuzzer builds it alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "face_engine.h"

namespace faceengine {

// Packed 8-bit RGB, rows top to bottom. The buffer comes from malloc and is not zero-filled, so pages
// a failed decode never wrote are never touched; release() hands it to a C caller (free() it).
class RgbImage {
public:
    long width = 0;
    long height = 0;

    RgbImage() = default;
    RgbImage(const RgbImage &) = delete;
    RgbImage &operator=(const RgbImage &) = delete;
    RgbImage(RgbImage &&other) noexcept { *this = std::move(other); }
    RgbImage &operator=(RgbImage &&other) noexcept {
        if (this != &other) {
            std::free(pixels_);
            width = other.width;
            height = other.height;
            pixels_ = other.pixels_;
            other.width = other.height = 0;
            other.pixels_ = nullptr;
        }
        return *this;
    }
    ~RgbImage() { std::free(pixels_); }

    // False when memory is exhausted; the previous content is gone either way.
    bool allocate(long newWidth, long newHeight) {
        std::free(pixels_);
        width = height = 0;
        const size_t bytes = static_cast<size_t>(newWidth) * static_cast<size_t>(newHeight) * 3;
        pixels_ = static_cast<uint8_t *>(std::malloc(bytes > 0 ? bytes : 1));
        if (pixels_ == nullptr) return false;
        width = newWidth;
        height = newHeight;
        return true;
    }
    uint8_t *data() { return pixels_; }
    const uint8_t *data() const { return pixels_; }
    size_t size() const { return static_cast<size_t>(width) * static_cast<size_t>(height) * 3; }
    uint8_t *release() {
        uint8_t *pixels = pixels_;
        pixels_ = nullptr;
        width = height = 0;
        return pixels;
    }

private:
    uint8_t *pixels_ = nullptr;
};

struct ImageHeader {
    fe_image_format format = FE_FORMAT_UNKNOWN;
    long storedWidth = 0;   // as coded in the file, before the EXIF orientation
    long storedHeight = 0;
    int orientation = 1;    // EXIF orientation 1–8
    int pngBitDepth = 0;    // PNG only, from IHDR
    int pngColorType = 0;
};

// Fills `error` (when not null) and returns its code.
fe_status setError(fe_error *error, fe_status code, const char *message);

// Header only: magic bytes, dimensions, EXIF orientation. max_pixels == 0: no cap.
fe_status probeImage(const uint8_t *data, size_t size, uint64_t maxPixels, ImageHeader &header, fe_error *error);

// Full decode with the orientation applied. maxPixels == 0 is treated as the default cap.
fe_status decodeImage(const uint8_t *data, size_t size, uint64_t maxPixels, RgbImage &image, fe_error *error);

// Bounded parse of an APP1 payload ("Exif\0\0" + TIFF header + IFD0). Returns the orientation tag
// (0x0112) when it holds 1–8, and 0 when the payload is not Exif or carries no valid orientation.
int exifOrientation(const uint8_t *payload, size_t size);

}  // namespace faceengine
