// The engine behind face_engine.h: HOG detection on a reduced copy, dlib landmarks, aligned chips,
// descriptors and quality figures. Decoding is in image_decoder.cpp, the descriptor network in
// face_network.cpp; the FE_MODEL_SFACE_2021DEC engine is in sface_engine.cpp and only dispatched to here.
#include "face_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <dlib/image_processing.h>
#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_transforms.h>

#include "face_network.hpp"
#include "image_decoder.hpp"
#include "landmark_models.hpp"
#include "rgb_image_dlib.hpp"
#include "sface_engine.hpp"

namespace {

using faceengine::RgbImage;
using Clock = std::chrono::steady_clock;

constexpr const char *kLandmarks5File = "shape_predictor_5_face_landmarks.dat";
constexpr const char *kLandmarks68File = "shape_predictor_68_face_landmarks.dat";
constexpr const char *kDescriptorFile = "dlib_face_recognition_resnet_model_v1.dat";
constexpr unsigned long kChipSize = 150;
constexpr double kChipPadding = 0.25;
// Widest intermediate sampling of the face for the quality figures (see qualityLuma).
constexpr long kQualityNativeMax = 600;
// Nose-base protrusion in front of the eye corners divided by half the distance between the eyes,
// for an average adult face; turns the nose's sideways offset into an angle.
constexpr double kNoseDepthRatio = 0.7;

double millisecondsSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

using faceengine::LazyPredictor;
using faceengine::SharedModels;

struct Detection {
    dlib::rectangle box;
    double score;
};

bool fileReadable(const std::string &path) {
    struct stat info;
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

fe_status fail(fe_error *error, fe_status code, const std::string &message) {
    return faceengine::setError(error, code, message.c_str());
}

// Averages k×k blocks (k = the integer part of the reduction) before the bilinear step, so that
// the detector does not see aliasing from skipped pixels.
dlib::matrix<dlib::rgb_pixel> reduced(const RgbImage &image, long targetWidth, long targetHeight) {
    const long factor = std::max(1L, std::min(image.width / targetWidth, image.height / targetHeight));
    dlib::matrix<dlib::rgb_pixel> result(targetHeight, targetWidth);
    if (factor == 1) {
        dlib::resize_image(image, result);
        return result;
    }
    const long boxWidth = image.width / factor, boxHeight = image.height / factor;
    dlib::matrix<dlib::rgb_pixel> boxed(boxHeight, boxWidth);
    const unsigned area = static_cast<unsigned>(factor * factor);
    std::vector<unsigned> sums(static_cast<size_t>(boxWidth) * 3);
    for (long by = 0; by < boxHeight; ++by) {
        std::fill(sums.begin(), sums.end(), 0u);
        for (long dy = 0; dy < factor; ++dy) {
            const uint8_t *row = image.data() + static_cast<size_t>(by * factor + dy) * image.width * 3;
            for (long bx = 0; bx < boxWidth; ++bx) {
                const uint8_t *p = row + bx * factor * 3;
                unsigned *s = &sums[static_cast<size_t>(bx) * 3];
                for (long dx = 0; dx < factor; ++dx, p += 3) {
                    s[0] += p[0];
                    s[1] += p[1];
                    s[2] += p[2];
                }
            }
        }
        for (long bx = 0; bx < boxWidth; ++bx) {
            const unsigned *s = &sums[static_cast<size_t>(bx) * 3];
            boxed(by, bx) = dlib::rgb_pixel(static_cast<unsigned char>((s[0] + area / 2) / area),
                                            static_cast<unsigned char>((s[1] + area / 2) / area),
                                            static_cast<unsigned char>((s[2] + area / 2) / area));
        }
    }
    if (boxWidth == targetWidth && boxHeight == targetHeight) return boxed;
    dlib::resize_image(boxed, result);
    return result;
}

dlib::rectangle clampedTo(const dlib::rectangle &box, long width, long height) {
    return dlib::rectangle(std::max(0L, box.left()), std::max(0L, box.top()), std::min(width - 1, box.right()),
                           std::min(height - 1, box.bottom()));
}

}  // namespace

struct fe_engine {
    // Set for FE_MODEL_SFACE_2021DEC, which then handles every call; the members below serve the dlib model.
    std::unique_ptr<faceengine::SFaceEngine> sface;
    dlib::frontal_face_detector detector;
    std::shared_ptr<const dlib::shape_predictor> landmarks5;
    LazyPredictor landmarks68;
    std::unique_ptr<faceengine::FaceDescriptorNetwork> network;
    uint64_t maxPixels = FE_DEFAULT_MAX_PIXELS;
    long detectionMaxSide = FE_DEFAULT_DETECTION_MAX_SIDE;
    bool upsampleSmallImages = true;

    std::vector<Detection> detect(const RgbImage &image) {
        std::vector<dlib::rect_detection> found;
        std::vector<Detection> result;
        const long longest = std::max(image.width, image.height);
        if (longest > detectionMaxSide) {
            const double scale = static_cast<double>(detectionMaxSide) / static_cast<double>(longest);
            const long width = std::max(1L, std::lround(image.width * scale));
            const long height = std::max(1L, std::lround(image.height * scale));
            const dlib::matrix<dlib::rgb_pixel> small = reduced(image, width, height);
            detector(small, found);
            const double sx = static_cast<double>(image.width) / width, sy = static_cast<double>(image.height) / height;
            for (const auto &d : found) {
                const dlib::rectangle box(std::lround(d.rect.left() * sx), std::lround(d.rect.top() * sy),
                                          std::lround((d.rect.right() + 1) * sx) - 1,
                                          std::lround((d.rect.bottom() + 1) * sy) - 1);
                result.push_back({box, d.detection_confidence});
            }
        } else {
            detector(image, found);
            if (found.empty() && upsampleSmallImages && longest * 2 <= detectionMaxSide) {
                // As dlib's own upsampling does it: pyramid_up, then map boxes back down.
                dlib::pyramid_down<2> pyramid;
                dlib::matrix<dlib::rgb_pixel> larger;
                dlib::pyramid_up(image, larger, pyramid);
                detector(larger, found);
                for (auto &d : found) d.rect = pyramid.rect_down(d.rect);
            }
            for (const auto &d : found) result.push_back({d.rect, d.detection_confidence});
        }
        for (auto &d : result) d.box = clampedTo(d.box, image.width, image.height);
        result.erase(std::remove_if(result.begin(), result.end(), [](const Detection &d) { return d.box.is_empty(); }),
                     result.end());
        std::sort(result.begin(), result.end(), [](const Detection &a, const Detection &b) {
            if (a.box.area() != b.box.area()) return a.box.area() > b.box.area();
            if (a.score != b.score) return a.score > b.score;
            return a.box.left() != b.box.left() ? a.box.left() < b.box.left() : a.box.top() < b.box.top();
        });
        return result;
    }
};

namespace {

dlib::chip_details chipGeometry(const dlib::full_object_detection &shape) {
    return dlib::get_face_chip_details(shape, kChipSize, kChipPadding);
}

// The descriptor's input, exactly as dlib's face_recognition_model_v1 extracts it.
faceengine::FaceChip alignedChip(const RgbImage &image, const dlib::chip_details &geometry) {
    faceengine::FaceChip chip;
    dlib::extract_image_chip(image, geometry, chip);
    return chip;
}

// One output sample of an area (box) resampling and the input samples it averages.
struct AreaTap {
    long index;
    double weight;
};

std::vector<std::vector<AreaTap>> areaTaps(long from, long to) {
    std::vector<std::vector<AreaTap>> taps(static_cast<size_t>(to));
    const double scale = static_cast<double>(from) / static_cast<double>(to);
    for (long i = 0; i < to; ++i) {
        const double begin = i * scale, end = (i + 1) * scale;
        for (long j = static_cast<long>(std::floor(begin)); j < from && j < end; ++j) {
            const double overlap = std::min(end, j + 1.0) - std::max(begin, static_cast<double>(j));
            if (overlap > 0) taps[static_cast<size_t>(i)].push_back({j, overlap / scale});
        }
    }
    return taps;
}

// Luma (BT.601 weights) of the aligned face at the descriptor chip's geometry, size × size.
//
// dlib's own 150×150 chip is sampled bilinearly from the pyramid level just above the target scale, so
// its fine detail swings with the face's exact size (aliasing right below a 2× reduction, smoothing right
// above it): re-encoding a photo moved one landmark by a pixel and the Laplacian variance from 1124 to 169.
// Here the face is sampled at about two samples per source pixel (at most kQualityNativeMax wide) and
// then area-averaged down; the same re-encodings then stay within ±10%.
std::vector<double> qualityLuma(const RgbImage &image, const dlib::chip_details &chip, long size) {
    const double sourcePixels = chip.rect.width() / static_cast<double>(chip.cols);
    const long native = std::max(size, std::min<long>(kQualityNativeMax, std::lround(std::ceil(2 * size * sourcePixels))));
    dlib::matrix<dlib::rgb_pixel> sampled;
    dlib::extract_image_chip(image, dlib::chip_details(chip.rect, dlib::chip_dims(native, native), chip.angle), sampled);
    std::vector<double> luma(static_cast<size_t>(native * native));
    for (long r = 0; r < native; ++r)
        for (long c = 0; c < native; ++c) {
            const dlib::rgb_pixel &p = sampled(r, c);
            luma[static_cast<size_t>(r * native + c)] = 0.299 * p.red + 0.587 * p.green + 0.114 * p.blue;
        }
    if (native == size) return luma;
    const auto taps = areaTaps(native, size);
    std::vector<double> rows(static_cast<size_t>(native * size)), result(static_cast<size_t>(size * size));
    for (long r = 0; r < native; ++r)
        for (long c = 0; c < size; ++c) {
            double sum = 0;
            for (const AreaTap &tap : taps[static_cast<size_t>(c)]) sum += tap.weight * luma[static_cast<size_t>(r * native + tap.index)];
            rows[static_cast<size_t>(r * size + c)] = sum;
        }
    for (long r = 0; r < size; ++r)
        for (long c = 0; c < size; ++c) {
            double sum = 0;
            for (const AreaTap &tap : taps[static_cast<size_t>(r)]) sum += tap.weight * rows[static_cast<size_t>(tap.index * size + c)];
            result[static_cast<size_t>(r * size + c)] = sum;
        }
    return result;
}

// Brightness: mean luma. Sharpness: variance of the 4-neighbour Laplacian of the luma over the chip's
// interior; the chip has a fixed face scale, so figures compare across photos.
void chipQuality(const RgbImage &image, const dlib::chip_details &chip, fe_face &face) {
    const long size = kChipSize;
    const std::vector<double> luma = qualityLuma(image, chip, size);
    double total = 0;
    for (double y : luma) total += y;
    face.brightness = total / static_cast<double>(luma.size());
    double sum = 0, squares = 0;
    long count = 0;
    for (long r = 1; r + 1 < size; ++r)
        for (long c = 1; c + 1 < size; ++c) {
            const size_t i = static_cast<size_t>(r * size + c);
            const double laplacian = luma[i - 1] + luma[i + 1] + luma[i - size] + luma[i + size] - 4 * luma[i];
            sum += laplacian;
            squares += laplacian * laplacian;
            ++count;
        }
    const double mean = sum / static_cast<double>(count);
    face.sharpness = std::max(0.0, squares / static_cast<double>(count) - mean * mean);
}

// dlib's 5-point order: parts 0–1 are the corners of the eye on the image's right, 2–3 those of the
// eye on the image's left, 4 the base of the nose. The nose's offset from the eye midpoint along the
// eye axis, in half eye distances, is sin(yaw)·depth / (cos(yaw)·half distance).
double yawDegrees(const dlib::full_object_detection &shape) {
    const dlib::dpoint rightSide = (dlib::dpoint(shape.part(0)) + dlib::dpoint(shape.part(1))) / 2;
    const dlib::dpoint leftSide = (dlib::dpoint(shape.part(2)) + dlib::dpoint(shape.part(3))) / 2;
    const dlib::dpoint nose(shape.part(4));
    const dlib::dpoint axis = rightSide - leftSide;
    const double halfDistance = axis.length() / 2;
    if (halfDistance < 1e-6) return 0;
    const dlib::dpoint middle = (rightSide + leftSide) / 2;
    const double offset = (nose - middle).dot(axis) / axis.length() / halfDistance;
    return std::atan(offset / kNoseDepthRatio) * 180.0 / M_PI;
}

void copyPoints(const dlib::full_object_detection &shape, fe_point *points, unsigned long count) {
    for (unsigned long i = 0; i < count && i < shape.num_parts(); ++i) {
        points[i].x = static_cast<double>(shape.part(i).x());
        points[i].y = static_cast<double>(shape.part(i).y());
    }
}

template <typename Body> fe_status guarded(fe_error *error, Body body) {
    try {
        return body();
    } catch (const dlib::serialization_error &e) {
        // A model read on first use (LazyPredictor) that turns out unreadable.
        return fail(error, FE_ERR_MODEL_MISSING, std::string("unreadable model: ") + e.what());
    } catch (const std::bad_alloc &) {
        return fail(error, FE_ERR_INTERNAL, "out of memory");
    } catch (const std::exception &e) {
        return fail(error, FE_ERR_INTERNAL, std::string("face engine: ") + e.what());
    } catch (...) {
        return fail(error, FE_ERR_INTERNAL, "face engine: unknown failure");
    }
}

// The SFace engine needs only its two ONNX files; the 68-point model (non-commercial licence) is used when
// present, shared with every other engine of the process, and otherwise 68-point landmarks are absent.
fe_status createSFace(const std::string &directory, const fe_engine_config *config, std::unique_ptr<fe_engine> &engine,
                      fe_error *error) {
    faceengine::SFaceSettings settings;
    if (config->max_pixels != 0) settings.maxPixels = config->max_pixels;
    if (config->detection_max_side < 0 || (config->detection_max_side > 0 && config->detection_max_side < 80))
        return fail(error, FE_ERR_INVALID_ARGUMENT, "detection_max_side must be 0 (default) or at least 80");
    if (config->detection_max_side != 0) settings.detectionMaxSide = config->detection_max_side;
    if (config->detection_first_side < -1 || (config->detection_first_side > 0 && config->detection_first_side < 160))
        return fail(error, FE_ERR_INVALID_ARGUMENT, "detection_first_side must be 0 (default), -1 (off) or at least 160");
    if (config->detection_first_side != 0) settings.detectionFirstSide = std::max(0, config->detection_first_side);
    if (config->own_convolutions < -1 || config->own_convolutions > 1)
        return fail(error, FE_ERR_INVALID_ARGUMENT, "own_convolutions must be 0 (default), 1 (on) or -1 (off)");
    settings.ownConvolutions = config->own_convolutions >= 0;
    const float threshold = config->detection_score_threshold;
    if (!(threshold == 0 || (threshold > 0 && threshold < 1)))
        return fail(error, FE_ERR_INVALID_ARGUMENT, "detection_score_threshold must be 0 (default) or between 0 and 1");
    if (threshold != 0) settings.scoreThreshold = threshold;
    switch (config->flip_augmentation) {
    case 0: settings.flipAugmentation = FE_SFACE_DEFAULT_FLIP_AUGMENTATION != 0; break;
    case 1: settings.flipAugmentation = true; break;
    case -1: settings.flipAugmentation = false; break;
    default: return fail(error, FE_ERR_INVALID_ARGUMENT, "flip_augmentation must be 0 (default), 1 (on) or -1 (off)");
    }
    LazyPredictor landmarks68;
    if (fileReadable(directory + kLandmarks68File)) landmarks68 = LazyPredictor(directory + kLandmarks68File);
    std::unique_ptr<faceengine::SFaceEngine> sface;
    const fe_status status = faceengine::SFaceEngine::create(directory, std::move(landmarks68), settings, sface, error);
    if (status != FE_OK) return status;
    engine.reset(new fe_engine);
    engine->sface = std::move(sface);
    return FE_OK;
}

}  // namespace

extern "C" {

fe_engine *fe_engine_create(const char *model_directory, const fe_engine_config *config, fe_error *error) {
    if (model_directory == nullptr) {
        faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "model directory is NULL");
        return nullptr;
    }
    std::unique_ptr<fe_engine> engine;
    const fe_status status = guarded(error, [&]() -> fe_status {
        std::string directory(model_directory);
        if (!directory.empty() && directory.back() != '/') directory += '/';
        const int32_t model = config != nullptr ? config->model : FE_MODEL_DLIB_RESNET_V1;
        if (model == FE_MODEL_SFACE_2021DEC) return createSFace(directory, config, engine, error);
        if (model != FE_MODEL_DLIB_RESNET_V1) return fail(error, FE_ERR_INVALID_ARGUMENT, "unknown model");
        for (const char *file : {kLandmarks5File, kLandmarks68File, kDescriptorFile})
            if (!fileReadable(directory + file)) return fail(error, FE_ERR_MODEL_MISSING, std::string("missing model file ") + file);
        engine.reset(new fe_engine);
        if (config != nullptr) {
            if (config->max_pixels != 0) engine->maxPixels = config->max_pixels;
            if (config->detection_max_side < 0 || (config->detection_max_side > 0 && config->detection_max_side < 80))
                return fail(error, FE_ERR_INVALID_ARGUMENT, "detection_max_side must be 0 (default) or at least 80");
            if (config->detection_max_side != 0) engine->detectionMaxSide = config->detection_max_side;
            engine->upsampleSmallImages = config->upsample_small_images != 0;
        }
        try {
            engine->landmarks5 = SharedModels::instance().predictor(directory + kLandmarks5File);
            engine->landmarks68 = LazyPredictor(directory + kLandmarks68File);
            engine->network.reset(new faceengine::FaceDescriptorNetwork(directory + kDescriptorFile));
        } catch (const dlib::serialization_error &e) {
            return fail(error, FE_ERR_MODEL_MISSING, std::string("unreadable model: ") + e.what());
        }
        engine->detector = SharedModels::instance().detector(directory);
        return FE_OK;
    });
    if (status != FE_OK) return nullptr;
    if (error != nullptr) faceengine::setError(error, FE_OK, "");
    return engine.release();
}

void fe_engine_destroy(fe_engine *engine) { delete engine; }

int32_t fe_engine_analyze(fe_engine *engine, const uint8_t *data, size_t size, const fe_analyze_options *options,
                          fe_analysis *analysis, fe_error *error) {
    if (engine == nullptr || options == nullptr || analysis == nullptr)
        return faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "NULL engine, options or analysis");
    std::memset(analysis, 0, sizeof *analysis);
    if (engine->sface) return engine->sface->analyze(data, size, *options, *analysis, error);
    return guarded(error, [&]() -> fe_status {
        auto start = Clock::now();
        RgbImage image;
        fe_status status = faceengine::decodeImage(data, size, engine->maxPixels, image, error);
        if (status != FE_OK) return status;
        const double decodeMs = millisecondsSince(start);

        start = Clock::now();
        const std::vector<Detection> detections = engine->detect(image);
        const double detectMs = millisecondsSince(start);

        start = Clock::now();
        std::unique_ptr<fe_face[]> faces(new fe_face[detections.size()]());
        const size_t detailed = options->max_faces > 0 ? std::min(detections.size(), static_cast<size_t>(options->max_faces)) : 0;
        std::vector<faceengine::FaceChip> chips;
        for (size_t i = 0; i < detections.size(); ++i) {
            fe_face &face = faces[i];
            const dlib::rectangle &box = detections[i].box;
            face.left = box.left();
            face.top = box.top();
            face.right = box.right();
            face.bottom = box.bottom();
            face.detector_score = detections[i].score;
            face.face_width = static_cast<int32_t>(box.width());
            const dlib::full_object_detection shape = (*engine->landmarks5)(image, box);
            copyPoints(shape, face.landmarks5, 5);
            face.yaw = yawDegrees(shape);
            const dlib::chip_details geometry = chipGeometry(shape);
            chipQuality(image, geometry, face);
            if (i < detailed && options->embeddings) chips.push_back(alignedChip(image, geometry));
            if (i < detailed && options->landmarks68) {
                copyPoints(engine->landmarks68.get()(image, box), face.landmarks68, 68);
                face.has_landmarks68 = 1;
            }
        }
        const std::vector<faceengine::FaceDescriptor> descriptors = engine->network->describe(chips);
        for (size_t i = 0; i < descriptors.size(); ++i) {
            std::copy(descriptors[i].begin(), descriptors[i].end(), faces[i].embedding);
            faces[i].has_embedding = 1;
        }
        analysis->embed_ms = millisecondsSince(start);
        analysis->decode_ms = decodeMs;
        analysis->detect_ms = detectMs;
        analysis->width = static_cast<int32_t>(image.width);
        analysis->height = static_cast<int32_t>(image.height);
        analysis->face_count = static_cast<int32_t>(detections.size());
        analysis->faces = faces.release();
        return FE_OK;
    });
}

void fe_analysis_free(fe_analysis *analysis) {
    if (analysis == nullptr) return;
    delete[] analysis->faces;
    analysis->faces = nullptr;
    analysis->face_count = 0;
}

int32_t fe_engine_embed_box(fe_engine *engine, const uint8_t *data, size_t size, int64_t left, int64_t top,
                            int64_t right, int64_t bottom, float *embedding, fe_error *error) {
    if (engine == nullptr || embedding == nullptr)
        return faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "NULL engine or embedding");
    if (right < left || bottom < top) return faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "empty face box");
    if (engine->sface) return engine->sface->embedBox(data, size, left, top, right, bottom, embedding, error);
    return guarded(error, [&]() -> fe_status {
        RgbImage image;
        const fe_status status = faceengine::decodeImage(data, size, engine->maxPixels, image, error);
        if (status != FE_OK) return status;
        const dlib::rectangle box(static_cast<long>(left), static_cast<long>(top), static_cast<long>(right),
                                  static_cast<long>(bottom));
        if (box.intersect(dlib::rectangle(0, 0, image.width - 1, image.height - 1)).is_empty())
            return faceengine::setError(error, FE_ERR_INVALID_ARGUMENT, "face box lies outside the image");
        const dlib::full_object_detection shape = (*engine->landmarks5)(image, box);
        const std::vector<faceengine::FaceDescriptor> descriptors = engine->network->describe({alignedChip(image, chipGeometry(shape))});
        std::copy(descriptors.front().begin(), descriptors.front().end(), embedding);
        return FE_OK;
    });
}

}  // extern "C"
