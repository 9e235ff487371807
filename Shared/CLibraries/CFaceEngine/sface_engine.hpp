// The FE_MODEL_SFACE_2021DEC engine behind face_engine.h: YuNet-2023mar detection (boxes and 5 landmarks)
// and SFace-2021dec descriptors through OpenCV's dnn module, with dlib's 68-point predictor when loaded.
// OpenCV stays inside sface_engine.cpp: this header only needs the C types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "face_engine.h"

namespace faceengine {

class LazyPredictor;

struct SFaceSettings {
    uint64_t maxPixels = FE_DEFAULT_MAX_PIXELS;
    long detectionMaxSide = FE_DEFAULT_DETECTION_MAX_SIDE;
    // Photos larger than this are scanned first on a copy this size (0: one scan at detectionMaxSide).
    long detectionFirstSide = FE_SFACE_DEFAULT_DETECTION_FIRST_SIDE;
    float scoreThreshold = FE_SFACE_DEFAULT_SCORE_THRESHOLD;
    bool flipAugmentation = FE_SFACE_DEFAULT_FLIP_AUGMENTATION != 0;
    // Images whose longest side is below this are enlarged to it before detection (capped by
    // detectionMaxSide). Measured on 186 photos shrunk to fit 250×250: 206 of 215 faces found at their own
    // size, 210 at 320, 212 at 480, 214 at 640, for 7, 10, 19 and 32 ms; faces of 60 pixels or more were all
    // found at every size. 320 is YuNet's own input size in OpenCV Zoo.
    long minimumDetectionSide = 320;
    // Area-average large faces down to about the chip's resolution before aligning, instead of sampling
    // them bilinearly (which aliases when a face is several times the 112-pixel chip).
    bool antialiasChips = true;
    // Run the networks' 1×1 convolutions as OpenBLAS matrix products, and SFace's depthwise ones as a direct loop
    // (convolutions.hpp), instead of OpenCV's own kernels; sets OpenBLAS to one thread per product, as they are spread
    // over OpenCV's threads.
    bool ownConvolutions = true;
};

class SFaceEngine {
public:
    // Loads FE_SFACE_DETECTOR_FILE and FE_SFACE_RECOGNIZER_FILE from directory (ending in '/'):
    // FE_ERR_MODEL_MISSING when either is absent or unreadable. landmarks68 may name no model.
    static fe_status create(const std::string &directory, LazyPredictor landmarks68,
                            const SFaceSettings &settings, std::unique_ptr<SFaceEngine> &engine, fe_error *error);
    ~SFaceEngine();
    SFaceEngine(const SFaceEngine &) = delete;
    SFaceEngine &operator=(const SFaceEngine &) = delete;

    const SFaceSettings &settings() const;

    // Same contracts as fe_engine_analyze / fe_engine_embed_box. Never throw: OpenCV and allocation
    // failures become FE_ERR_INTERNAL.
    fe_status analyze(const uint8_t *data, size_t size, const fe_analyze_options &options, fe_analysis &analysis,
                      fe_error *error);
    fe_status embedBox(const uint8_t *data, size_t size, int64_t left, int64_t top, int64_t right, int64_t bottom,
                       float *embedding, fe_error *error);

private:
    SFaceEngine();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace faceengine
