// Area-averaging reduction of an 8-bit, 3-channel image, equal to the bit to cv::resize with INTER_AREA, faster for the
// factors that are not whole numbers (a photo's detection copy, a large face's chip).
//
// OpenCV 4.6 reduces by a factor that is not a whole number through a table of scattered taps, one multiply-add at a
// time. Here each source row is reduced across with every cell padded to the same number of taps (unrolled), the rows
// are then summed down, and the sums are rounded sixteen at a time: 0.37× OpenCV's time over the test photos, against
// 0.62× before the padded taps and the wide rounding (`facegate-bench area-reduction`, Benchmarks/RESULTS.md); under
// load the reduction had been 5.7 % of a matcher's CPU by `perf`. The same cells, weights and order of float sums are
// kept, so the result is the same image: compared on 2,100 random reductions of three test photos and crops of them
// (factors 0.05 to 1, a third of them swapping to B, G, R), no value differed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace faceengine {

namespace area_detail {

// Per target pixel along one axis, the contiguous source pixels its cell covers and their weights. A cell starts at
// d·scale and is scale wide (clipped at the image's end); an edge pixel covered by no more than 1/1000 of a pixel is
// left out and the others keep their weights, as OpenCV's table does.
struct Taps {
    std::vector<int> first, count, offset;
    std::vector<float> weights;
    int widest = 0;

    Taps(int source, int target) {
        const double scale = static_cast<double>(source) / target;
        for (int d = 0; d < target; ++d) {
            const double from = d * scale, to = from + scale;
            const double cell = std::min(scale, source - from);
            const int end = std::min(static_cast<int>(std::floor(to)), source - 1);
            const int full = std::min(static_cast<int>(std::ceil(from)), end);
            offset.push_back(static_cast<int>(weights.size()));
            first.push_back(full);
            if (full - from > 1e-3) {
                first.back() = full - 1;
                weights.push_back(static_cast<float>((full - from) / cell));
            }
            for (int i = full; i < end; ++i) weights.push_back(static_cast<float>(1.0 / cell));
            if (to - end > 1e-3) weights.push_back(static_cast<float>(std::min(std::min(to - end, 1.0), cell) / cell));
            count.push_back(static_cast<int>(weights.size()) - offset.back());
            widest = std::max(widest, count.back());
        }
    }
};

// One source row (already in floats, padded with `taps` zero pixels) reduced across into `line` (B, G, R order when
// `swapRedBlue`): each target pixel's taps summed in order from zero, with every cell padded to `taps` weights by zero
// weights at its end, which add nothing (a sum of non-negative values plus 0 is itself). A fixed count lets the
// compiler unroll the taps.
template <int Fixed>
void reduceAcross(const float *row, const Taps &columns, const std::vector<float> &padded, int taps, int targets, bool swapRedBlue,
                  float *line) {
    const int count = Fixed > 0 ? Fixed : taps;
    const int red = swapRedBlue ? 2 : 0, blue = swapRedBlue ? 0 : 2;
    for (int x = 0; x < targets; ++x) {
        const float *w = padded.data() + static_cast<size_t>(x) * count;
        const float *p = row + columns.first[x] * 3;
        float c0 = 0, c1 = 0, c2 = 0;
        for (int j = 0; j < count; ++j, p += 3) {
            c0 += p[0] * w[j];
            c1 += p[1] * w[j];
            c2 += p[2] * w[j];
        }
        line[3 * x + red] = c0;
        line[3 * x + 1] = c1;
        line[3 * x + blue] = c2;
    }
}

// `values` rounded to the nearest integer (ties to even) and clamped to 0…255, as cv::saturate_cast<uint8_t> does one
// at a time; with SSE2, sixteen at a time by the same rounding.
inline void store(const float *values, int count, uint8_t *out) {
    int i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= count; i += 16) {
        const __m128i a = _mm_cvtps_epi32(_mm_loadu_ps(values + i)), b = _mm_cvtps_epi32(_mm_loadu_ps(values + i + 4));
        const __m128i c = _mm_cvtps_epi32(_mm_loadu_ps(values + i + 8)), d = _mm_cvtps_epi32(_mm_loadu_ps(values + i + 12));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
    }
#endif
    for (; i < count; ++i) out[i] = cv::saturate_cast<uint8_t>(values[i]);
}

}  // namespace area_detail

// `dst` (allocated by the caller, possibly a view into a larger image) receives `src` reduced to its size, with the
// first and third channels swapped when `swapRedBlue`. No side of `dst` may exceed the same side of `src`.
inline void areaReduce(const cv::Mat &src, cv::Mat &dst, bool swapRedBlue) {
    CV_Assert(src.type() == CV_8UC3 && dst.type() == CV_8UC3 && dst.cols <= src.cols && dst.rows <= src.rows && !dst.empty());
    const double sx = static_cast<double>(src.cols) / dst.cols, sy = static_cast<double>(src.rows) / dst.rows;
    if (std::abs(sx - std::round(sx)) < 1e-12 && std::abs(sy - std::round(sy)) < 1e-12) {
        // Whole-number factors take OpenCV's own fast path, which sums in integers.
        cv::Mat reduced;
        cv::resize(src, reduced, dst.size(), 0, 0, cv::INTER_AREA);
        if (swapRedBlue) cv::cvtColor(reduced, dst, cv::COLOR_RGB2BGR);
        else reduced.copyTo(dst);
        return;
    }
    const area_detail::Taps columns(src.cols, dst.cols), rows(src.rows, dst.rows);
    // Every cell across padded to the widest one's count, in one table.
    const int taps = columns.widest;
    std::vector<float> padded(static_cast<size_t>(dst.cols) * taps, 0.f);
    for (int x = 0; x < dst.cols; ++x)
        std::copy_n(columns.weights.data() + columns.offset[x], columns.count[x], padded.data() + static_cast<size_t>(x) * taps);
    const auto across = taps == 1 ? area_detail::reduceAcross<1> : taps == 2 ? area_detail::reduceAcross<2>
                      : taps == 3 ? area_detail::reduceAcross<3> : area_detail::reduceAcross<0>;
    const int width = dst.cols * 3;
    cv::parallel_for_(cv::Range(0, dst.rows), [&](const cv::Range &range) {
        // Source rows reduced across, in slots by row number: the rows of one target row are consecutive and at most
        // rows.widest, so they never share a slot.
        const int slots = rows.widest;
        std::vector<float> lines(static_cast<size_t>(slots) * width), sum(width), row((src.cols + taps) * 3, 0.f);
        std::vector<int> held(slots, -1);
        for (int y = range.start; y < range.end; ++y) {
            std::fill(sum.begin(), sum.end(), 0.f);
            for (int k = 0; k < rows.count[y]; ++k) {
                const int r = rows.first[y] + k;
                float *line = lines.data() + static_cast<size_t>(r % slots) * width;
                if (held[r % slots] != r) {
                    const uint8_t *in = src.ptr<uint8_t>(r);
                    for (int i = 0; i < src.cols * 3; ++i) row[i] = in[i];
                    across(row.data(), columns, padded, taps, dst.cols, swapRedBlue, line);
                    held[r % slots] = r;
                }
                const float weight = rows.weights[rows.offset[y] + k];
                for (int i = 0; i < width; ++i) sum[i] += weight * line[i];
            }
            area_detail::store(sum.data(), width, dst.ptr<uint8_t>(y));
        }
    });
}

}  // namespace faceengine
