#include "warp.h"

#include <math.h>
#include <stdlib.h>

static double clamp(double value, double low, double high) {
    return value < low ? low : (value > high ? high : value);
}

int fg_shepards_warp(const uint8_t *source, int width, int height, int channels,
                     const double *from, const double *to, int count, double power,
                     uint8_t *destination) {
    if (!source || !destination || !from || !to || width < 1 || height < 1 || channels < 1 || channels > 4 || count < 1) {
        return -1;
    }
    // As ImageMagick does: distances from pixel centres (x + ½), wᵢ = 1 / max(1, |d|^power) computed from the
    // squared distance, (d²)^(power/2), with no pow() for the usual powers 2 and 4.
    const double halfPower = power / 2;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            double sumWeights = 0, shiftX = 0, shiftY = 0;
            for (int i = 0; i < count; i++) {
                const double dx = x + 0.5 - to[2 * i], dy = y + 0.5 - to[2 * i + 1];
                const double squared = dx * dx + dy * dy;
                const double scaled = halfPower == 2 ? squared * squared
                                    : halfPower == 1 ? squared
                                                     : pow(squared, halfPower);
                const double weight = scaled < 1 ? 1 : 1 / scaled;
                sumWeights += weight;
                shiftX += weight * (from[2 * i] - to[2 * i]);
                shiftY += weight * (from[2 * i + 1] - to[2 * i + 1]);
            }
            double sourceX = x + shiftX / sumWeights, sourceY = y + shiftY / sumWeights;
            sourceX = clamp(sourceX, 0, width - 1);
            sourceY = clamp(sourceY, 0, height - 1);
            const int x0 = (int)sourceX, y0 = (int)sourceY;
            const int x1 = x0 + 1 < width ? x0 + 1 : x0, y1 = y0 + 1 < height ? y0 + 1 : y0;
            const double fx = sourceX - x0, fy = sourceY - y0;
            uint8_t *out = destination + ((size_t)y * width + x) * channels;
            for (int c = 0; c < channels; c++) {
                const double top = source[((size_t)y0 * width + x0) * channels + c] * (1 - fx)
                                 + source[((size_t)y0 * width + x1) * channels + c] * fx;
                const double bottom = source[((size_t)y1 * width + x0) * channels + c] * (1 - fx)
                                    + source[((size_t)y1 * width + x1) * channels + c] * fx;
                out[c] = (uint8_t)lround(clamp(top * (1 - fy) + bottom * fy, 0, 255));
            }
        }
    }
    return 0;
}
