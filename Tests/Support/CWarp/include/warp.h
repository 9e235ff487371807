#pragma once
// Shepard's inverse-distance warp for the synthetic camera frames of the tests (FaceGateTestSupport): the
// same mapping as ImageMagick's `-distort Shepards` with `-virtual-pixel edge`, computed in a few tens of
// milliseconds instead of the seconds ImageMagick takes for a face crop.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Warps `source` (width × height pixels of `channels` interleaved 8-bit samples) into `destination` (same
// size). Control point i moves from (from[2i], from[2i+1]) to (to[2i], to[2i+1]). Each destination pixel p
// samples the source at p + Σ wᵢ (fromᵢ − toᵢ) / Σ wᵢ, with wᵢ = 1 / max(1, |p + ½ − toᵢ|^power),
// bilinearly, with coordinates outside the image clamped to its edge. Returns 0, or −1 for bad arguments.
int fg_shepards_warp(const uint8_t *source, int width, int height, int channels,
                     const double *from, const double *to, int count, double power,
                     uint8_t *destination);

#ifdef __cplusplus
}
#endif
