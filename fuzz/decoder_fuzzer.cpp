// libFuzzer harness for the image decoder behind fe_image_probe / fe_image_decode (JPEG, PNG, EXIF).
// Built with fuzz/run.sh; the decoder compiles without dlib, so this links only libjpeg and libpng.
#include <cstdint>
#include <cstdlib>

#include "face_engine.h"
#include "../Shared/CFaceEngine/image_decoder.hpp"

namespace {
// Smaller than the production cap so that each run stays fast; the cap logic is the same code.
constexpr uint64_t kFuzzMaxPixels = 16000000;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // The EXIF parser on its own, so that arbitrary bytes reach it without a valid JPEG around them.
    const int orientation = faceengine::exifOrientation(data, size);
    if (orientation < 0 || orientation > 8) __builtin_trap();

    fe_error error;
    fe_image_info info;
    const int32_t probed = fe_image_probe(data, size, kFuzzMaxPixels, &info, &error);

    fe_rgb_image image;
    const int32_t decoded = fe_image_decode(data, size, kFuzzMaxPixels, &image, &error);
    if (decoded == FE_OK) {
        // A decodable image must have a header the probe accepts, with the same upright size.
        if (probed != FE_OK || info.width != image.width || info.height != image.height) __builtin_trap();
        if (static_cast<uint64_t>(image.width) * static_cast<uint64_t>(image.height) > kFuzzMaxPixels) __builtin_trap();
        // Read every byte, so an undersized buffer shows up under AddressSanitizer.
        unsigned checksum = 0;
        const size_t bytes = static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3;
        for (size_t i = 0; i < bytes; i += 1) checksum += image.pixels[i];
        volatile unsigned sink = checksum;
        (void)sink;
        fe_rgb_image_free(&image);
    } else if (image.pixels != nullptr) {
        __builtin_trap();  // failures hand out nothing
    } else if (error.message[sizeof error.message - 1] != '\0') {
        __builtin_trap();
    }
    return 0;
}
