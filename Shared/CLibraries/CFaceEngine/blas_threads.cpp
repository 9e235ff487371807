#include "face_engine.h"

// OpenBLAS's own entry point (declared here rather than through <cblas.h>, whose declarations
// clash with dlib's BLAS bindings in C++).
extern "C" void openblas_set_num_threads(int num_threads);

extern "C" void fe_set_blas_threads(int32_t threads) {
    openblas_set_num_threads(threads < 1 ? 1 : threads);
}
