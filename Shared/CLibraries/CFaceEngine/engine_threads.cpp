// The process-wide thread settings of the engines: OpenBLAS (dlib) and OpenCV (SFace, through its gate).
#include "face_engine.h"
#include "sface_engine.hpp"

// OpenBLAS's own entry point (declared here rather than through <cblas.h>, whose declarations
// clash with dlib's BLAS bindings in C++).
extern "C" void openblas_set_num_threads(int num_threads);

extern "C" void fe_set_blas_threads(int32_t threads) {
    openblas_set_num_threads(threads < 1 ? 1 : threads);
}

extern "C" void fe_set_lone_analysis_threads(int32_t threads) { faceengine::setLoneAnalysisThreads(threads); }

extern "C" void fe_note_queued_analyses(int32_t delta) { faceengine::noteQueuedAnalyses(delta); }

extern "C" void fe_analysis_thread_counts(uint64_t *several_threads, uint64_t *one_thread) {
    uint64_t several = 0, one = 0;
    faceengine::analysisThreadCounts(several, one);
    if (several_threads != nullptr) *several_threads = several;
    if (one_thread != nullptr) *one_thread = one;
}
