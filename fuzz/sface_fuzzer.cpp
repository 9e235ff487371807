// libFuzzer harness for the SFace engine's entry points (fe_engine_analyze and fe_engine_embed_box with
// FE_MODEL_SFACE_2021DEC): whatever the bytes decode to goes through YuNet, the landmark alignment, the quality
// measures and SFace. Built with `fuzz/run.sh SECONDS sface`; needs the models in FACEGATE_MODEL_DIR.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "face_engine.h"

namespace {
// Smaller than the production cap so that each run stays fast; the cap logic is the same code.
constexpr uint64_t kFuzzMaxPixels = 4000000;

fe_engine *engine() {
    static fe_engine *const instance = [] {
        const char *directory = std::getenv("FACEGATE_MODEL_DIR");
        fe_engine_config config{};
        config.model = FE_MODEL_SFACE_2021DEC;
        config.max_pixels = kFuzzMaxPixels;
        fe_error error{};
        fe_engine *created = fe_engine_create(directory ? directory : "../.run/models", &config, &error);
        if (created == nullptr) {
            std::fprintf(stderr, "sface_fuzzer: %s (set FACEGATE_MODEL_DIR)\n", error.message);
            std::abort();
        }
        return created;
    }();
    return instance;
}

bool finite(double value) { return std::isfinite(value); }

// What every analysis the engine hands out must satisfy.
void check(const fe_analysis &analysis, const fe_analyze_options &options) {
    if (analysis.face_count < 0 || (analysis.face_count > 0 && analysis.faces == nullptr)) __builtin_trap();
    if (static_cast<uint64_t>(analysis.width) * static_cast<uint64_t>(analysis.height) > kFuzzMaxPixels) __builtin_trap();
    for (int32_t index = 0; index < analysis.face_count; index += 1) {
        const fe_face &face = analysis.faces[index];
        if (face.right < face.left || face.bottom < face.top) __builtin_trap();
        if (!finite(face.detector_score) || !finite(face.sharpness) || !finite(face.brightness) || !finite(face.yaw)) __builtin_trap();
        for (const fe_point &point : face.landmarks5) {
            if (!finite(point.x) || !finite(point.y)) __builtin_trap();
        }
        if (face.has_embedding) {
            if (index >= options.max_faces) __builtin_trap();
            double norm = 0;
            for (float component : face.embedding) {
                if (!std::isfinite(component)) __builtin_trap();
                norm += static_cast<double>(component) * component;
            }
            if (std::fabs(std::sqrt(norm) - 1) > 1e-3) __builtin_trap();  // SFace descriptors are unit length
        }
    }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const fe_analyze_options options{1, 0, 2};
    fe_analysis analysis{};
    fe_error error{};
    if (fe_engine_analyze(engine(), data, size, &options, &analysis, &error) == FE_OK) {
        check(analysis, options);
        if (analysis.face_count > 0 && analysis.faces[0].has_embedding) {
            // The largest face's own box describes the same face again.
            const fe_face &face = analysis.faces[0];
            float embedding[FE_EMBEDDING_SIZE];
            if (fe_engine_embed_box(engine(), data, size, face.left, face.top, face.right, face.bottom, embedding, &error) != FE_OK) {
                __builtin_trap();
            }
            for (int i = 0; i < FE_EMBEDDING_SIZE; i += 1) {
                if (std::fabs(embedding[i] - face.embedding[i]) > 1e-4f) __builtin_trap();
            }
        }
        fe_analysis_free(&analysis);
    } else if (analysis.faces != nullptr || error.message[sizeof error.message - 1] != '\0') {
        __builtin_trap();  // failures hand out nothing, and say why in a terminated message
    }
    // Any box, inverted or far outside the image, is refused or answered; never a crash.
    if (size >= 32) {
        int64_t box[4];
        std::memcpy(box, data + size - sizeof box, sizeof box);
        float embedding[FE_EMBEDDING_SIZE];
        (void)fe_engine_embed_box(engine(), data, size - sizeof box, box[0], box[1], box[2], box[3], embedding, &error);
    }
    return 0;
}
