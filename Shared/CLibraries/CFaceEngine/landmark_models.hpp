// dlib's landmark models and face detector, shared by every engine of the process (face_engine.cpp and
// sface_engine.cpp).
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unistd.h>

#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_processing/shape_predictor.h>
#include <dlib/revision.h>

namespace faceengine {

// Landmark models are read-only after loading and shape_predictor::operator() is const, so every engine in the
// process shares one copy per file (the 68-point model is ~100 MB). A model stays loaded once read: an engine
// replaced or a service restarted in the same process does not read it again.
class SharedModels {
public:
    static SharedModels &instance() {
        static SharedModels models;
        return models;
    }

    // Throws dlib::serialization_error for an unreadable file.
    std::shared_ptr<const dlib::shape_predictor> predictor(const std::string &path) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (auto existing = predictors_.find(path); existing != predictors_.end()) return existing->second;
        auto loaded = std::make_shared<dlib::shape_predictor>();
        dlib::deserialize(path) >> *loaded;
        predictors_[path] = loaded;
        return loaded;
    }

    // Engines copy one prototype of dlib's HOG face detector, read from `directory` (ending in '/').
    dlib::frontal_face_detector detector(const std::string &directory) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!detector_) detector_.reset(new dlib::frontal_face_detector(loadDetector(directory)));
        return *detector_;
    }

private:
    // get_frontal_face_detector() decompresses a model built into dlib: about 0.48 s of CPU here, against 5 ms to read
    // the same detector saved plainly. The first process to need it saves it beside the models (named by dlib's
    // version, written to a private file and renamed into place, so no reader sees half a file); a read-only
    // directory just means decompressing each time.
    static dlib::frontal_face_detector loadDetector(const std::string &directory) {
        const std::string saved = directory + "dlib-" + std::to_string(DLIB_MAJOR_VERSION) + "." +
                                  std::to_string(DLIB_MINOR_VERSION) + "." + std::to_string(DLIB_PATCH_VERSION) +
                                  "-frontal-face-detector.dat";
        dlib::frontal_face_detector detector;
        try {
            dlib::deserialize(saved) >> detector;
            return detector;
        } catch (const dlib::serialization_error &) {
        }
        detector = dlib::get_frontal_face_detector();
        const std::string partial = saved + "." + std::to_string(::getpid()) + ".partial";
        try {
            dlib::serialize(partial) << detector;
            if (std::rename(partial.c_str(), saved.c_str()) != 0) std::remove(partial.c_str());
        } catch (const dlib::serialization_error &) {
            std::remove(partial.c_str());
        }
        return detector;
    }

    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<const dlib::shape_predictor>> predictors_;
    std::unique_ptr<dlib::frontal_face_detector> detector_;
};

// The 68-point model, read on the first analysis that asks for 68 points rather than when the engine is made:
// reading it takes about 1.1 s of CPU here (more than the rest of an engine's start-up together), and an engine
// that only matches (no liveness) never needs it. The first such analysis in a process waits for the read. An
// engine is used by one thread at a time, so the cached pointer needs no lock; SharedModels has its own.
class LazyPredictor {
public:
    LazyPredictor() = default;  // no model: 68-point landmarks are absent
    explicit LazyPredictor(std::string path) : path_(std::move(path)) {}

    bool available() const { return !path_.empty(); }

    // Throws dlib::serialization_error when the file cannot be read.
    const dlib::shape_predictor &get() {
        if (!loaded_) loaded_ = SharedModels::instance().predictor(path_);
        return *loaded_;
    }

private:
    std::string path_;
    std::shared_ptr<const dlib::shape_predictor> loaded_;
};

}  // namespace faceengine
