// YuNet-2023mar + SFace-2021dec on OpenCV 4.6 (Debian 12).
//
// OpenCV 4.6's cv::FaceDetectorYN cannot load YuNet-2023mar (it needs 4.8), so the detector is a plain
// dnn::Net whose twelve outputs (class score, objectness, box and landmark offsets for strides 8, 16 and
// 32) are decoded here, followed by non-maximum suppression. The descriptor network is SFace's ONNX file
// in another dnn::Net; its input is the 112×112 chip that FaceRecognizerSF::alignCrop would cut out
// (same landmark template, same least-squares similarity), except that large faces are area-averaged to
// the chip's scale first instead of being sampled bilinearly.
#include "sface_engine.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>
#include <sys/stat.h>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include <dlib/image_processing/shape_predictor.h>

#include "area_reduce.hpp"
#include "convolutions.hpp"
#include "image_decoder.hpp"
#include "landmark_models.hpp"
#include "rgb_image_dlib.hpp"

extern "C" void openblas_set_num_threads(int num_threads);

namespace faceengine {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kChipSize = 112;
// Where SFace expects the five YuNet landmarks on its 112×112 chip (the template of OpenCV's alignCrop
// and of the ArcFace family): right eye, left eye, nose tip, right and left mouth corner.
constexpr double kTemplate[5][2] = {
    {38.2946, 51.6963}, {73.5318, 51.5014}, {56.0252, 71.7366}, {41.5493, 92.3655}, {70.7299, 92.2041}};
// Above this many image pixels per chip pixel, bilinear sampling skips pixels (aliasing): reduce first.
constexpr double kAliasingRatio = 1.5;
constexpr int kStrides[3] = {8, 16, 32};
constexpr float kNmsThreshold = 0.3f;
constexpr int kNmsTopK = 5000;
// A face found by the first, reduced scan is scanned again in a region reaching this many times its longer side beyond
// it on every side: at 1.0 the largest face's descriptor agreed with the full scan's (cosine ≥ 0.99) on 155 of 159
// photos over 640 px, at 0.5 on 127 (opencv-python's YuNet, 2026-12-07).
constexpr double kRefinementMargin = 1.0;
// The regions are scanned instead of the whole copy only when their pixels are at most this share of it.
constexpr double kRefinementBudget = 0.8;
// Nose-tip protrusion in front of the eye centres divided by half the distance between the eyes; turns the
// nose's sideways offset from the facial midline into an angle. Chosen so that yaw agrees best with the dlib
// engine's on the same faces (730 faces, median absolute difference 4.8 degrees), so that turn thresholds
// carry over between the engines.
constexpr double kNoseTipDepthRatio = 0.9;

double millisecondsSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Detection {
    cv::Rect2d box;                         // image coordinates, continuous
    long left = 0, top = 0, right = 0, bottom = 0;   // the box in whole pixels, dlib convention, clamped
    float score = 0;
    std::array<cv::Point2d, 5> landmarks;   // YuNet order, image coordinates
    long area() const { return (right - left + 1) * (bottom - top + 1); }
};

// A decoded image seen by OpenCV in place (R, G, B order; OpenCV treats channels as anonymous).
cv::Mat wrap(const RgbImage &image) {
    return cv::Mat(static_cast<int>(image.height), static_cast<int>(image.width), CV_8UC3,
                   const_cast<uint8_t *>(image.data()), static_cast<size_t>(image.width) * 3);
}

// Least-squares similarity (rotation, uniform scale, translation; no reflection) taking the landmarks to
// the chip template. In complex numbers the optimum is z' = a·(z − mean) + mean' with
// a = Σ conj(s)·d / Σ |s|², s and d the centred points: the same transform as Umeyama's method that
// alignCrop uses.
cv::Matx23d chipTransform(const std::array<cv::Point2d, 5> &points) {
    cv::Point2d sourceMean(0, 0), templateMean(0, 0);
    for (int i = 0; i < 5; ++i) {
        sourceMean += points[i];
        templateMean += cv::Point2d(kTemplate[i][0], kTemplate[i][1]);
    }
    sourceMean *= 0.2;
    templateMean *= 0.2;
    double re = 0, im = 0, norm = 0;
    for (int i = 0; i < 5; ++i) {
        const cv::Point2d s = points[i] - sourceMean;
        const cv::Point2d d = cv::Point2d(kTemplate[i][0], kTemplate[i][1]) - templateMean;
        re += s.x * d.x + s.y * d.y;
        im += s.x * d.y - s.y * d.x;
        norm += s.dot(s);
    }
    if (norm < 1e-12) norm = 1e-12;
    const double a = re / norm, b = im / norm;
    return cv::Matx23d(a, -b, templateMean.x - (a * sourceMean.x - b * sourceMean.y),
                       b, a, templateMean.y - (b * sourceMean.x + a * sourceMean.y));
}

// The aligned 112×112 chip (R, G, B), for the descriptor and the quality figures. When the face is much larger
// than the chip, the part of the image under the chip is first area-averaged to about chip scale, and the
// transform composed with that reduction. Measured on the 115 of 186 portrait photos where this applies: the
// descriptor of the full photo agreed better with that of a 250×250 crop of it in 87 to 98 of them (mean
// cosine 0.945 to 0.949 and 0.941 to 0.948), and obama.jpg against obama3.jpg rose from 0.78 to 0.81.
cv::Mat alignedChip(const cv::Mat &rgb, const Detection &face, bool antialias) {
    const cv::Matx23d transform = chipTransform(face.landmarks);
    const double scale = std::hypot(transform(0, 0), transform(1, 0));   // chip pixels per image pixel
    cv::Mat chip;
    if (!antialias || scale * kAliasingRatio >= 1.0) {
        cv::warpAffine(rgb, chip, transform, cv::Size(kChipSize, kChipSize), cv::INTER_LINEAR, cv::BORDER_CONSTANT);
        return chip;
    }
    cv::Matx23d inverse;
    cv::invertAffineTransform(transform, inverse);
    double minX = 1e300, minY = 1e300, maxX = -1e300, maxY = -1e300;
    for (const cv::Point2d corner : {cv::Point2d(0, 0), cv::Point2d(kChipSize, 0), cv::Point2d(0, kChipSize),
                                     cv::Point2d(kChipSize, kChipSize)}) {
        const cv::Point2d p(inverse(0, 0) * corner.x + inverse(0, 1) * corner.y + inverse(0, 2),
                            inverse(1, 0) * corner.x + inverse(1, 1) * corner.y + inverse(1, 2));
        minX = std::min(minX, p.x);
        minY = std::min(minY, p.y);
        maxX = std::max(maxX, p.x);
        maxY = std::max(maxY, p.y);
    }
    const double margin = 2.0 / scale;
    const cv::Rect region = cv::Rect(cv::Point(static_cast<int>(std::floor(std::max(0.0, minX - margin))),
                                               static_cast<int>(std::floor(std::max(0.0, minY - margin)))),
                                     cv::Point(static_cast<int>(std::ceil(std::min<double>(rgb.cols, maxX + margin))),
                                               static_cast<int>(std::ceil(std::min<double>(rgb.rows, maxY + margin)))));
    if (region.width <= 0 || region.height <= 0) {
        cv::warpAffine(rgb, chip, transform, cv::Size(kChipSize, kChipSize), cv::INTER_LINEAR, cv::BORDER_CONSTANT);
        return chip;
    }
    const cv::Size reducedSize(std::max(1, static_cast<int>(std::lround(region.width * scale))),
                               std::max(1, static_cast<int>(std::lround(region.height * scale))));
    cv::Mat reduced(reducedSize, CV_8UC3);
    areaReduce(rgb(region), reduced, false);
    // cv::resize maps pixel centres: x' = (x − x0 + ½)·fx − ½, so an image point is
    // x = (x' + ½)/fx − ½ + x0; the chip transform applied to that point takes reduced pixels to the chip.
    const double fx = static_cast<double>(reducedSize.width) / region.width;
    const double fy = static_cast<double>(reducedSize.height) / region.height;
    const double ox = 0.5 / fx - 0.5 + region.x, oy = 0.5 / fy - 0.5 + region.y;
    const cv::Matx23d composed(transform(0, 0) / fx, transform(0, 1) / fy,
                               transform(0, 0) * ox + transform(0, 1) * oy + transform(0, 2),
                               transform(1, 0) / fx, transform(1, 1) / fy,
                               transform(1, 0) * ox + transform(1, 1) * oy + transform(1, 2));
    cv::warpAffine(reduced, chip, composed, cv::Size(kChipSize, kChipSize), cv::INTER_LINEAR, cv::BORDER_CONSTANT);
    return chip;
}

// Brightness: mean luma (BT.601 weights). Sharpness: variance of the 4-neighbour Laplacian of the luma over
// the chip's interior. The chip has a fixed face scale, so the figures compare across photos.
void chipQuality(const cv::Mat &chip, fe_face &face) {
    const int size = kChipSize;
    std::vector<double> luma(static_cast<size_t>(size * size));
    double total = 0;
    for (int r = 0; r < size; ++r) {
        const uint8_t *row = chip.ptr<uint8_t>(r);
        for (int c = 0; c < size; ++c) {
            const double y = 0.299 * row[3 * c] + 0.587 * row[3 * c + 1] + 0.114 * row[3 * c + 2];
            luma[static_cast<size_t>(r * size + c)] = y;
            total += y;
        }
    }
    face.brightness = total / static_cast<double>(luma.size());
    double sum = 0, squares = 0;
    long count = 0;
    for (int r = 1; r + 1 < size; ++r)
        for (int c = 1; c + 1 < size; ++c) {
            const size_t i = static_cast<size_t>(r * size + c);
            const double laplacian = luma[i - 1] + luma[i + 1] + luma[i - size] + luma[i + size] - 4 * luma[i];
            sum += laplacian;
            squares += laplacian * laplacian;
            ++count;
        }
    const double mean = sum / static_cast<double>(count);
    face.sharpness = std::max(0.0, squares / static_cast<double>(count) - mean * mean);
}

// YuNet's points: 0 the subject's right eye (image left), 1 the left eye, 2 the nose tip, 3 and 4 the right
// and left mouth corners. The facial midline at nose height is taken halfway between the eyes' and the
// mouth corners' midpoints (robust to roll and to the head tilting up or down); the nose tip's offset from
// it along the eye axis, in half eye distances, is tan(yaw)·depth ratio. Positive: nose towards image right.
double yawDegrees(const std::array<cv::Point2d, 5> &p) {
    const cv::Point2d axis = p[1] - p[0];
    const double length = std::hypot(axis.x, axis.y);
    if (length < 1e-6) return 0;
    const cv::Point2d midline = ((p[0] + p[1]) * 0.5 + (p[3] + p[4]) * 0.5) * 0.5;
    const double offset = (p[2] - midline).dot(axis) / length / (length / 2);
    return std::atan(offset / kNoseTipDepthRatio) * 180.0 / M_PI;
}

// dlib's 68-point predictor was trained on boxes from dlib's HOG detector, which sit lower than YuNet's and
// are squarer (no forehead). The predictor runs in the box a HOG detection of the face would have, predicted
// from the YuNet box: median ratios over 730 faces both detectors found (centre 0.5 and 0.56 of the YuNet
// box, 1.08 × its width, 0.86 × its height). Against the dlib engine's own 68 points this halved the median
// point difference (0.030 to 0.017 interocular distances) compared with running in the YuNet box itself.
constexpr double kHogBoxCentreX = 0.5, kHogBoxCentreY = 0.56, kHogBoxWidth = 1.08, kHogBoxHeight = 0.86;

dlib::rectangle predictorBox(const Detection &face) {
    const double cx = face.box.x + kHogBoxCentreX * face.box.width;
    const double cy = face.box.y + kHogBoxCentreY * face.box.height;
    const double w = kHogBoxWidth * face.box.width, h = kHogBoxHeight * face.box.height;
    return dlib::rectangle(std::lround(cx - w / 2), std::lround(cy - h / 2), std::lround(cx + w / 2) - 1,
                           std::lround(cy + h / 2) - 1);
}

double intersectionOverUnion(long l1, long t1, long r1, long b1, long l2, long t2, long r2, long b2) {
    const long w = std::min(r1, r2) - std::max(l1, l2) + 1, h = std::min(b1, b2) - std::max(t1, t2) + 1;
    if (w <= 0 || h <= 0) return 0;
    const double inter = static_cast<double>(w) * h;
    const double a1 = static_cast<double>(r1 - l1 + 1) * (b1 - t1 + 1), a2 = static_cast<double>(r2 - l2 + 1) * (b2 - t2 + 1);
    return inter / (a1 + a2 - inter);
}

void normalise(float *v, size_t n) {
    double squares = 0;
    for (size_t i = 0; i < n; ++i) squares += static_cast<double>(v[i]) * v[i];
    if (squares <= 0) return;
    const double inverse = 1.0 / std::sqrt(squares);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(v[i] * inverse);
}

fe_status fail(fe_error *error, fe_status code, const std::string &message) {
    return setError(error, code, message.c_str());
}

template <typename Body> fe_status guarded(fe_error *error, Body body) {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return fail(error, FE_ERR_INTERNAL, "out of memory");
    } catch (const dlib::serialization_error &e) {
        // A model read on first use (LazyPredictor) that turns out unreadable.
        return fail(error, FE_ERR_MODEL_MISSING, std::string("unreadable model: ") + e.what());
    } catch (const cv::Exception &e) {
        // e.what() repeats the source path; the function and the condition are enough to diagnose.
        return fail(error, FE_ERR_INTERNAL, "OpenCV error in " + e.func + ": " + e.err);
    } catch (const std::exception &e) {
        return fail(error, FE_ERR_INTERNAL, std::string("face engine: ") + e.what());
    } catch (...) {
        return fail(error, FE_ERR_INTERNAL, "face engine: unknown failure");
    }
}

// OpenCV's thread count is process-wide (its TBB arena) and may only change while no parallel region runs. An
// analysis that starts while no other is wanted may use `loneThreads` (default: every core); while others are
// wanted (decoding, waiting, or queued in a pool: fe_note_queued_analyses), each uses one, so a busy process keeps
// one analysis per core. The count changes only between analyses: one that arrives while a lone analysis runs on
// several threads waits for it to end. Measured on obama2.jpg, 2 cores: alone 56.5 ms on one thread, 31 ms on two;
// two at a time 35 analyses/s on one thread each, 31.5/s on two each. Changing the count costs about 2 ms (the
// arena's threads start again), so it changes only when the load does.
class ThreadGate {
public:
    static ThreadGate &shared() {
        static ThreadGate gate;
        return gate;
    }

    void setLoneThreads(int threads) {
        std::lock_guard<std::mutex> lock(mutex_);
        loneThreads_ = threads > 0 ? threads : std::max(1, cv::getNumberOfCPUs());
    }

    void noteQueued(int delta) {
        std::lock_guard<std::mutex> lock(mutex_);
        queued_ = std::max(0L, queued_ + delta);
    }

    void counts(uint64_t &severalThreads, uint64_t &oneThread) {
        std::lock_guard<std::mutex> lock(mutex_);
        severalThreads = severalThreadRuns_;
        oneThread = oneThreadRuns_;
    }

    // One analysis, wanted from its construction (before decoding) to its end; `run` (once) waits for its turn with OpenCV.
    class Analysis {
    public:
        Analysis() : gate_(ThreadGate::shared()) { gate_.arrive(); }
        ~Analysis() { gate_.leave(running_); }
        Analysis(const Analysis &) = delete;
        Analysis &operator=(const Analysis &) = delete;

        void run() {
            gate_.enter();
            running_ = true;
        }

    private:
        ThreadGate &gate_;
        bool running_ = false;
    };

private:
    ThreadGate() : loneThreads_(std::max(1, cv::getNumberOfCPUs())) {}

    void arrive() {
        std::lock_guard<std::mutex> lock(mutex_);
        ++wanted_;
    }

    void enter() {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return running_ == 0 || threads_ == 1; });
        if (running_ == 0) {
            const int threads = wanted_ + queued_ > 1 ? 1 : loneThreads_;
            if (threads != threads_) {
                cv::setNumThreads(threads);
                threads_ = threads;
            }
        }
        ++running_;
        ++(threads_ > 1 ? severalThreadRuns_ : oneThreadRuns_);
    }

    void leave(bool running) {
        std::lock_guard<std::mutex> lock(mutex_);
        --wanted_;
        if (running && --running_ == 0) changed_.notify_all();
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    int loneThreads_;
    int threads_ = 0;      // what OpenCV was last set to; 0: not set by the gate yet
    long running_ = 0;     // analyses using OpenCV now
    long wanted_ = 0;      // analyses begun and not ended, running or not
    long queued_ = 0;      // analyses waiting in pools for an engine
    uint64_t severalThreadRuns_ = 0, oneThreadRuns_ = 0;
};

int roundUp32(int n) { return (n + 31) / 32 * 32; }

// Candidate faces of one or more scans, in image coordinates, before non-maximum suppression.
struct Candidates {
    std::vector<cv::Rect2d> boxes;
    std::vector<float> scores;
    std::vector<std::array<cv::Point2d, 5>> points;
};

// A B, G, R copy of `rgb` at `size` (reduced by area, enlarged bilinearly, or as it is), in the top left of a
// zero-filled image whose sides are multiples of 32: the network halves the resolution five times.
cv::Mat paddedCopy(const cv::Mat &rgb, cv::Size size) {
    cv::Mat padded(roundUp32(size.height), roundUp32(size.width), CV_8UC3, cv::Scalar::all(0));
    cv::Mat bgr = padded(cv::Rect(cv::Point(), size));
    if (size == rgb.size()) {
        cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    } else if (size.width < rgb.cols) {
        areaReduce(rgb, bgr, true);
    } else {
        cv::Mat enlarged;
        cv::resize(rgb, enlarged, size, 0, 0, cv::INTER_LINEAR);
        cv::cvtColor(enlarged, bgr, cv::COLOR_RGB2BGR);
    }
    return padded;
}

// Regions of the detection copy (`bounds`) to scan again at full scale around `faces` (image coordinates; `scale`
// maps them into the copy): kRefinementMargin of the face's longer side around each, left and top edges on the
// 32-pixel grid, right and bottom edges rounded up to it; overlapping regions merged into their bounding box.
std::vector<cv::Rect> refinementRegions(const std::vector<Detection> &faces, cv::Size2d scale, cv::Rect bounds) {
    std::vector<cv::Rect> regions;
    for (const Detection &face : faces) {
        const double x = face.box.x * scale.width, y = face.box.y * scale.height;
        const double w = face.box.width * scale.width, h = face.box.height * scale.height;
        const double margin = kRefinementMargin * std::max(w, h);
        const int left = std::max(0, static_cast<int>(std::floor((x - margin) / 32)) * 32);
        const int top = std::max(0, static_cast<int>(std::floor((y - margin) / 32)) * 32);
        const int right = std::min(bounds.width, roundUp32(static_cast<int>(std::ceil(x + w + margin))));
        const int bottom = std::min(bounds.height, roundUp32(static_cast<int>(std::ceil(y + h + margin))));
        if (right > left && bottom > top) regions.emplace_back(left, top, right - left, bottom - top);
    }
    for (bool merged = true; merged;) {
        merged = false;
        for (size_t i = 0; i < regions.size() && !merged; ++i)
            for (size_t j = i + 1; j < regions.size() && !merged; ++j)
                if ((regions[i] & regions[j]).area() > 0) {
                    regions[i] |= regions[j];
                    regions.erase(regions.begin() + static_cast<long>(j));
                    merged = true;
                }
    }
    return regions;
}

}  // namespace

struct SFaceEngine::Impl {
    SFaceSettings settings;
    cv::dnn::Net detector;
    cv::dnn::Net recognizer;
    LazyPredictor landmarks68;
    std::vector<cv::String> detectorOutputs;

    std::vector<Detection> detect(const cv::Mat &rgb, uint64_t &pixels);
    uint64_t scan(const cv::Mat &copy, cv::Rect region, cv::Size2d scale, Candidates &found);
    std::vector<Detection> suppress(const Candidates &found, long width, long height) const;
    void describe(const std::vector<cv::Mat> &chips, std::vector<std::array<float, FE_EMBEDDING_SIZE>> &descriptors);
};

// With detectionFirstSide, a photo whose detection copy is at least twice that long is first scanned on a copy that
// long, only to find where its faces are. Each face found is then scanned again at the full detection scale, in a
// region of the detection copy that reaches kRefinementMargin times the face's longer side beyond it on every side
// (regions that overlap are merged, and each starts on the network's 32-pixel grid so that it sees the pixels the
// full scan would). Those boxes and landmarks are the full scan's, give or take what lies beyond the region; but a
// face the small copy misses (too small, or cut by the border) is never looked for, which is why it is off by default.
// When the coarse scan finds nothing, or the regions would cost more than kRefinementBudget of the full scan (a face
// that fills the photo), the whole copy is scanned. `pixels` adds up the pixels the network ran on.
std::vector<Detection> SFaceEngine::Impl::detect(const cv::Mat &rgb, uint64_t &pixels) {
    const long width = rgb.cols, height = rgb.rows, longest = std::max(width, height);
    double scale = 1;
    if (longest > settings.detectionMaxSide)
        scale = static_cast<double>(settings.detectionMaxSide) / longest;
    else if (longest < settings.minimumDetectionSide)
        scale = static_cast<double>(std::min(settings.minimumDetectionSide, settings.detectionMaxSide)) / longest;
    const cv::Size size = scale == 1 ? rgb.size()
                                     : cv::Size(std::max(1, static_cast<int>(std::lround(width * scale))),
                                                std::max(1, static_cast<int>(std::lround(height * scale))));
    const cv::Mat copy = paddedCopy(rgb, size);
    const cv::Rect whole(0, 0, copy.cols, copy.rows);
    const cv::Size2d fine(static_cast<double>(size.width) / width, static_cast<double>(size.height) / height);
    Candidates candidates;
    if (settings.detectionFirstSide > 0 && 2 * settings.detectionFirstSide <= std::max(size.width, size.height)) {
        const double reduction = static_cast<double>(settings.detectionFirstSide) / std::max(size.width, size.height);
        const cv::Size small(std::max(1, static_cast<int>(std::lround(size.width * reduction))),
                             std::max(1, static_cast<int>(std::lround(size.height * reduction))));
        cv::Mat coarse(roundUp32(small.height), roundUp32(small.width), CV_8UC3, cv::Scalar::all(0));
        cv::Mat coarseCopy = coarse(cv::Rect(cv::Point(), small));
        areaReduce(copy(cv::Rect(cv::Point(), size)), coarseCopy, false);
        Candidates found;
        pixels += scan(coarse, cv::Rect(cv::Point(), coarse.size()),
                       cv::Size2d(static_cast<double>(small.width) / width, static_cast<double>(small.height) / height), found);
        const std::vector<Detection> faces = suppress(found, width, height);
        const std::vector<cv::Rect> regions = refinementRegions(faces, fine, whole);
        long area = 0;
        for (const cv::Rect &region : regions) area += region.area();
        if (!faces.empty() && area <= kRefinementBudget * whole.area()) {
            for (const cv::Rect &region : regions) pixels += scan(copy, region, fine, candidates);
            return suppress(candidates, width, height);
        }
    }
    pixels += scan(copy, whole, fine, candidates);
    return suppress(candidates, width, height);
}

// YuNet on `region` of `copy` (a padded copy; the region on the 32-pixel grid): its candidate faces are added to `found` in image coordinates, a pixel (x, y) of the copy being the
// image's (x / scale.width, y / scale.height). Answers the pixels scanned.
uint64_t SFaceEngine::Impl::scan(const cv::Mat &copy, cv::Rect region, cv::Size2d scale, Candidates &found) {
    detector.setInput(cv::dnn::blobFromImage(copy(region)));   // 1×3×H×W, B G R, 0–255
    std::vector<cv::Mat> outputs;
    detector.forward(outputs, detectorOutputs);
    for (int level = 0; level < 3; ++level) {
        const int stride = kStrides[level];
        const int columns = region.width / stride, rows = region.height / stride;
        const cv::Mat &cls = outputs[level], &obj = outputs[3 + level], &bbox = outputs[6 + level], &kps = outputs[9 + level];
        const size_t anchors = static_cast<size_t>(columns) * rows;
        CV_Assert(cls.total() == anchors && obj.total() == anchors && bbox.total() == anchors * 4 &&
                  kps.total() == anchors * 10);
        const float *clsData = cls.ptr<float>(), *objData = obj.ptr<float>();
        const float *boxData = bbox.ptr<float>(), *kpsData = kps.ptr<float>();
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < columns; ++c) {
                const size_t i = static_cast<size_t>(r) * columns + c;
                const float score = std::sqrt(std::min(1.f, std::max(0.f, clsData[i])) *
                                              std::min(1.f, std::max(0.f, objData[i])));
                if (score < settings.scoreThreshold) continue;
                const float *b = boxData + i * 4, *k = kpsData + i * 10;
                const double cx = (c + b[0]) * stride + region.x, cy = (r + b[1]) * stride + region.y;
                const double w = std::exp(b[2]) * stride, h = std::exp(b[3]) * stride;
                found.boxes.emplace_back((cx - w / 2) / scale.width, (cy - h / 2) / scale.height, w / scale.width, h / scale.height);
                found.scores.push_back(score);
                std::array<cv::Point2d, 5> landmarks;
                for (int n = 0; n < 5; ++n)
                    landmarks[n] = cv::Point2d(((c + k[2 * n]) * stride + region.x) / scale.width,
                                               ((r + k[2 * n + 1]) * stride + region.y) / scale.height);
                found.points.push_back(landmarks);
            }
    }
    return static_cast<uint64_t>(region.area());
}

// The candidates after non-maximum suppression, clamped to the `width` × `height` image, largest first.
std::vector<Detection> SFaceEngine::Impl::suppress(const Candidates &found, long width, long height) const {
    std::vector<int> kept;
    cv::dnn::NMSBoxes(found.boxes, found.scores, settings.scoreThreshold, kNmsThreshold, kept, 1.f, kNmsTopK);
    std::vector<Detection> result;
    for (int index : kept) {
        Detection d;
        d.box = found.boxes[index];
        d.score = found.scores[index];
        d.landmarks = found.points[index];
        d.left = std::max(0L, std::lround(d.box.x));
        d.top = std::max(0L, std::lround(d.box.y));
        d.right = std::min(width - 1, std::lround(d.box.x + d.box.width) - 1);
        d.bottom = std::min(height - 1, std::lround(d.box.y + d.box.height) - 1);
        if (d.right < d.left || d.bottom < d.top) continue;
        result.push_back(d);
    }
    std::sort(result.begin(), result.end(), [](const Detection &a, const Detection &b) {
        if (a.area() != b.area()) return a.area() > b.area();
        if (a.score != b.score) return a.score > b.score;
        return a.left != b.left ? a.left < b.left : a.top < b.top;
    });
    return result;
}

// One L2-normalised descriptor per chip; with flip augmentation, the normalised mean of the chip's and its
// mirror image's normalised features. All chips (and mirrors) go through the network as one batch.
void SFaceEngine::Impl::describe(const std::vector<cv::Mat> &chips,
                                 std::vector<std::array<float, FE_EMBEDDING_SIZE>> &descriptors) {
    descriptors.clear();
    if (chips.empty()) return;
    const int views = settings.flipAugmentation ? 2 : 1;
    std::vector<cv::Mat> inputs;
    inputs.reserve(chips.size() * views);
    for (const cv::Mat &chip : chips) {
        inputs.push_back(chip);
        if (views == 2) {
            cv::Mat mirrored;
            cv::flip(chip, mirrored, 1);
            inputs.push_back(mirrored);
        }
    }
    // The chips are R, G, B already, which is what FaceRecognizerSF hands the network after swapping B and R.
    recognizer.setInput(cv::dnn::blobFromImages(inputs, 1.0, cv::Size(kChipSize, kChipSize), cv::Scalar(), false, false));
    const cv::Mat features = recognizer.forward().reshape(1, static_cast<int>(inputs.size()));
    CV_Assert(features.cols == FE_EMBEDDING_SIZE && features.type() == CV_32F);
    descriptors.resize(chips.size());
    for (size_t i = 0; i < chips.size(); ++i) {
        std::array<float, FE_EMBEDDING_SIZE> &out = descriptors[i];
        out.fill(0);
        for (int v = 0; v < views; ++v) {
            std::array<float, FE_EMBEDDING_SIZE> view;
            std::memcpy(view.data(), features.ptr<float>(static_cast<int>(i * views + v)), sizeof view);
            normalise(view.data(), view.size());
            for (size_t j = 0; j < view.size(); ++j) out[j] += view[j];
        }
        normalise(out.data(), out.size());
    }
}

SFaceEngine::SFaceEngine() : impl_(new Impl) {}

fe_status SFaceEngine::create(const std::string &directory, LazyPredictor landmarks68,
                              const SFaceSettings &settings, std::unique_ptr<SFaceEngine> &engine, fe_error *error) {
    return guarded(error, [&]() -> fe_status {
        std::unique_ptr<SFaceEngine> created(new SFaceEngine);
        Impl &impl = *created->impl_;
        impl.settings = settings;
        impl.landmarks68 = std::move(landmarks68);
        // The layer factory is the process's: replaced only while this engine reads a network. YuNet keeps OpenCV's
        // depthwise kernel, faster than the direct loop on its large maps (convolutions.hpp).
        static std::mutex reading;
        std::lock_guard<std::mutex> lock(reading);
        struct ConvolutionFactory {
            bool registered;
            ConvolutionFactory(bool wanted, bool depthwise) : registered(wanted) {
                if (registered) cv::dnn::LayerFactory::registerLayer("Convolution", depthwise ? createConvolution : createPointwiseConvolution);
            }
            ~ConvolutionFactory() {
                if (registered) cv::dnn::LayerFactory::unregisterLayer("Convolution");
            }
        };
        if (settings.ownConvolutions) openblas_set_num_threads(1);
        for (const char *file : {FE_SFACE_DETECTOR_FILE, FE_SFACE_RECOGNIZER_FILE}) {
            const std::string path = directory + file;
            const bool detector = file == std::string(FE_SFACE_DETECTOR_FILE);
            struct stat info;
            if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
                return fail(error, FE_ERR_MODEL_MISSING, std::string("missing model file ") + file);
            try {
                const ConvolutionFactory factory(settings.ownConvolutions, !detector);
                (detector ? impl.detector : impl.recognizer) = cv::dnn::readNetFromONNX(path);
            } catch (const cv::Exception &e) {
                return fail(error, FE_ERR_MODEL_MISSING, std::string("unreadable model ") + file + ": " + e.err);
            }
        }
        for (cv::dnn::Net *net : {&impl.detector, &impl.recognizer}) {
            net->setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
            net->setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
        }
        for (const char *kind : {"cls", "obj", "bbox", "kps"})
            for (int stride : kStrides) impl.detectorOutputs.push_back(std::string(kind) + "_" + std::to_string(stride));
        engine = std::move(created);
        return FE_OK;
    });
}

SFaceEngine::~SFaceEngine() = default;

const SFaceSettings &SFaceEngine::settings() const { return impl_->settings; }

fe_status SFaceEngine::analyze(const uint8_t *data, size_t size, const fe_analyze_options &options,
                               fe_analysis &analysis, fe_error *error) {
    return guarded(error, [&]() -> fe_status {
        ThreadGate::Analysis turn;
        auto start = Clock::now();
        RgbImage image;
        const fe_status status = decodeImage(data, size, impl_->settings.maxPixels, image, error);
        if (status != FE_OK) return status;
        const double decodeMs = millisecondsSince(start);

        turn.run();
        start = Clock::now();
        const cv::Mat rgb = wrap(image);
        uint64_t detectorPixels = 0;
        const std::vector<Detection> detections = impl_->detect(rgb, detectorPixels);
        const double detectMs = millisecondsSince(start);

        start = Clock::now();
        std::unique_ptr<fe_face[]> faces(new fe_face[detections.size()]());
        const size_t detailed = options.max_faces > 0 ? std::min(detections.size(), static_cast<size_t>(options.max_faces)) : 0;
        std::vector<cv::Mat> chips;
        for (size_t i = 0; i < detections.size(); ++i) {
            const Detection &d = detections[i];
            fe_face &face = faces[i];
            face.left = d.left;
            face.top = d.top;
            face.right = d.right;
            face.bottom = d.bottom;
            face.detector_score = d.score;
            face.face_width = static_cast<int32_t>(d.right - d.left + 1);
            for (int n = 0; n < 5; ++n) face.landmarks5[n] = fe_point{d.landmarks[n].x, d.landmarks[n].y};
            face.yaw = yawDegrees(d.landmarks);
            cv::Mat chip = alignedChip(rgb, d, impl_->settings.antialiasChips);
            chipQuality(chip, face);
            if (i < detailed && options.embeddings) chips.push_back(chip);
            if (i < detailed && options.landmarks68 && impl_->landmarks68.available()) {
                const dlib::full_object_detection shape = impl_->landmarks68.get()(image, predictorBox(d));
                for (unsigned long n = 0; n < 68 && n < shape.num_parts(); ++n)
                    face.landmarks68[n] = fe_point{static_cast<double>(shape.part(n).x()), static_cast<double>(shape.part(n).y())};
                face.has_landmarks68 = 1;
            }
        }
        std::vector<std::array<float, FE_EMBEDDING_SIZE>> descriptors;
        impl_->describe(chips, descriptors);
        for (size_t i = 0; i < descriptors.size(); ++i) {
            std::copy(descriptors[i].begin(), descriptors[i].end(), faces[i].embedding);
            faces[i].has_embedding = 1;
        }
        analysis.embed_ms = millisecondsSince(start);
        analysis.decode_ms = decodeMs;
        analysis.detect_ms = detectMs;
        analysis.detector_pixels = detectorPixels;
        analysis.width = static_cast<int32_t>(image.width);
        analysis.height = static_cast<int32_t>(image.height);
        analysis.face_count = static_cast<int32_t>(detections.size());
        analysis.faces = faces.release();
        return FE_OK;
    });
}

fe_status SFaceEngine::embedBox(const uint8_t *data, size_t size, int64_t left, int64_t top, int64_t right,
                                int64_t bottom, float *embedding, fe_error *error) {
    return guarded(error, [&]() -> fe_status {
        ThreadGate::Analysis turn;
        RgbImage image;
        const fe_status status = decodeImage(data, size, impl_->settings.maxPixels, image, error);
        if (status != FE_OK) return status;
        if (right < 0 || bottom < 0 || left >= image.width || top >= image.height)
            return setError(error, FE_ERR_INVALID_ARGUMENT, "face box lies outside the image");
        turn.run();
        const cv::Mat rgb = wrap(image);
        uint64_t detectorPixels = 0;
        const std::vector<Detection> detections = impl_->detect(rgb, detectorPixels);
        const Detection *best = nullptr;
        double bestOverlap = 0;
        for (const Detection &d : detections) {
            const double overlap = intersectionOverUnion(d.left, d.top, d.right, d.bottom, static_cast<long>(left),
                                                         static_cast<long>(top), static_cast<long>(right),
                                                         static_cast<long>(bottom));
            if (overlap > bestOverlap) {
                bestOverlap = overlap;
                best = &d;
            }
        }
        if (best == nullptr) return setError(error, FE_ERR_INVALID_ARGUMENT, "no detected face overlaps the face box");
        std::vector<std::array<float, FE_EMBEDDING_SIZE>> descriptors;
        impl_->describe({alignedChip(rgb, *best, impl_->settings.antialiasChips)}, descriptors);
        std::copy(descriptors.front().begin(), descriptors.front().end(), embedding);
        return FE_OK;
    });
}

}  // namespace faceengine

// The C entry points of face_engine.h that belong to the SFace engine alone.
using faceengine::Clock;
using faceengine::millisecondsSince;
using faceengine::ThreadGate;

extern "C" void fe_set_lone_analysis_threads(int32_t threads) { ThreadGate::shared().setLoneThreads(threads); }

extern "C" void fe_note_queued_analyses(int32_t delta) { ThreadGate::shared().noteQueued(delta); }

extern "C" int64_t fe_area_reduction_compare(const uint8_t *rgb, int32_t width, int32_t height, int32_t x, int32_t y,
                                             int32_t regionWidth, int32_t regionHeight, int32_t targetWidth,
                                             int32_t targetHeight, int32_t repeats, double *engine_ms, double *opencv_ms) {
    if (rgb == nullptr || x < 0 || y < 0 || regionWidth < 1 || regionHeight < 1 || x + regionWidth > width ||
        y + regionHeight > height || targetWidth < 1 || targetHeight < 1 || targetWidth > regionWidth ||
        targetHeight > regionHeight || repeats < 0)
        return -1;
    try {
        const cv::Mat image(height, width, CV_8UC3, const_cast<uint8_t *>(rgb), static_cast<size_t>(width) * 3);
        const cv::Mat region = image(cv::Rect(x, y, regionWidth, regionHeight));
        cv::Mat expected, reduced(targetHeight, targetWidth, CV_8UC3), difference;
        cv::resize(region, expected, reduced.size(), 0, 0, cv::INTER_AREA);
        faceengine::areaReduce(region, reduced, false);
        cv::absdiff(expected, reduced, difference);
        const int64_t differing = cv::countNonZero(difference.reshape(1));
        if (repeats > 0) {
            // One thread, the two in turn; medians.
            const int threads = cv::getNumThreads();
            cv::setNumThreads(1);
            std::vector<double> ours, theirs;
            for (int32_t i = 0; i < repeats; ++i) {
                auto start = Clock::now();
                faceengine::areaReduce(region, reduced, false);
                ours.push_back(millisecondsSince(start));
                start = Clock::now();
                cv::resize(region, expected, reduced.size(), 0, 0, cv::INTER_AREA);
                theirs.push_back(millisecondsSince(start));
            }
            cv::setNumThreads(threads);
            for (std::vector<double> *times : {&ours, &theirs}) std::sort(times->begin(), times->end());
            if (engine_ms != nullptr) *engine_ms = ours[ours.size() / 2];
            if (opencv_ms != nullptr) *opencv_ms = theirs[theirs.size() / 2];
        }
        return differing;
    } catch (...) {
        return -1;
    }
}

extern "C" void fe_analysis_thread_counts(uint64_t *several_threads, uint64_t *one_thread) {
    uint64_t several = 0, one = 0;
    ThreadGate::shared().counts(several, one);
    if (several_threads != nullptr) *several_threads = several;
    if (one_thread != nullptr) *one_thread = one;
}
