#include "warp.h"

#include <math.h>
#include <stdlib.h>

static double clamp(double value, double low, double high) {
    return value < low ? low : (value > high ? high : value);
}

// The weighted sums of one pixel, in single precision and in any order (so that they vectorise): the shifts are
// sub-pixel amounts whose rounding moves no sample.
#if defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static void shepardsSums(float x, float y, const float *toX, const float *toY, const float *dX, const float *dY, int count,
                         int power4, float halfPower, float *sums) {
#pragma clang fp reassociate(on)
    float sumWeights = 0, shiftX = 0, shiftY = 0;
    for (int i = 0; i < count; i++) {
        const float dx = x - toX[i], dy = y - toY[i];
        const float squared = dx * dx + dy * dy;
        const float scaled = power4 ? squared * squared : powf(squared, halfPower);
        const float weight = scaled < 1 ? 1 : 1 / scaled;
        sumWeights += weight;
        shiftX += weight * dX[i];
        shiftY += weight * dY[i];
    }
    sums[0] = sumWeights;
    sums[1] = shiftX;
    sums[2] = shiftY;
}

int fg_shepards_warp(const uint8_t *source, int width, int height, int channels,
                     const double *from, const double *to, int count, double power,
                     uint8_t *destination) {
    if (!source || !destination || !from || !to || width < 1 || height < 1 || channels < 1 || channels > 4 || count < 1) {
        return -1;
    }
    float *points = malloc(sizeof(float) * 4 * (size_t)count);
    if (!points) return -1;
    float *toX = points, *toY = points + count, *dX = points + 2 * count, *dY = points + 3 * count;
    for (int i = 0; i < count; i++) {
        toX[i] = (float)to[2 * i];
        toY[i] = (float)to[2 * i + 1];
        dX[i] = (float)(from[2 * i] - to[2 * i]);
        dY[i] = (float)(from[2 * i + 1] - to[2 * i + 1]);
    }
    // As ImageMagick does: distances from pixel centres (x + ½), wᵢ = 1 / max(1, |d|^power) computed from the
    // squared distance, (d²)^(power/2), with no pow() for the usual power 4.
    const int power4 = power == 4;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            float sums[3];
            shepardsSums((float)x + 0.5f, (float)y + 0.5f, toX, toY, dX, dY, count, power4, (float)(power / 2), sums);
            double sourceX = x + (double)sums[1] / sums[0], sourceY = y + (double)sums[2] / sums[0];
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
    free(points);
    return 0;
}
