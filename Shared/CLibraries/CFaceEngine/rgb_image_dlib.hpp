// RgbImage as a dlib generic image, so that dlib reads decoded pixels in place. Shared by both engines
// (the SFace engine runs dlib's 68-point predictor too); one definition keeps the specialisation identical.
#pragma once

#include <new>

#include <dlib/image_processing/generic_image.h>
#include <dlib/pixel.h>

#include "image_decoder.hpp"

namespace dlib {
template <> struct image_traits<faceengine::RgbImage> {
    typedef rgb_pixel pixel_type;
};
}  // namespace dlib

namespace faceengine {
inline long num_rows(const RgbImage &image) { return image.height; }
inline long num_columns(const RgbImage &image) { return image.width; }
inline void *image_data(RgbImage &image) { return image.data(); }
inline const void *image_data(const RgbImage &image) { return image.data(); }
inline long width_step(const RgbImage &image) { return image.width * 3; }
inline void set_image_size(RgbImage &image, long rows, long columns) {
    if (!image.allocate(columns, rows)) throw std::bad_alloc();
}
static_assert(sizeof(dlib::rgb_pixel) == 3, "decoded rows are packed R, G, B bytes");
}  // namespace faceengine
