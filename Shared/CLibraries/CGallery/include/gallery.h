#pragma once
// In-memory 1:N face gallery: contiguous structure-of-arrays storage, exact
// Euclidean top-k search, O(1) removal by swap-with-last.
//
// Every function taking a cg_gallery is safe to call from many threads at
// once: searches share a reader-writer lock (writers preferred), mutations
// hold it exclusively. The FaceEngine module wraps this; nothing else should
// include it.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CG_STORAGE_FLOAT32 = 0,
    CG_STORAGE_FLOAT16 = 1,
    CG_STORAGE_INT8 = 2,   // per-vector scale: x ≈ scale * code
} cg_storage;

typedef enum {
    CG_KERNEL_AUTO = 0,    // the fastest measured here (see Benchmarks/RESULTS.md)
    CG_KERNEL_SIMD = 1,    // hand-vectorised AVX2/FMA/F16C, scalar where the CPU lacks them
    CG_KERNEL_BLAS = 2,    // OpenBLAS sgemv / sgemm (float32 storage only; others fall back to SIMD)
    CG_KERNEL_SCALAR = 3,  // plain C loops
} cg_kernel;

typedef struct cg_gallery cg_gallery;

typedef struct {
    uint8_t template_id[16];
    uint8_t user_id[16];
    float distance;
} cg_match;

enum {
    CG_OK = 0,
    CG_REPLACED = 1,
    CG_ERR_NOMEM = -1,
    CG_ERR_NONFINITE = -2,
    CG_ERR_FULL = -3,      // more rows than a 32-bit row index holds
};

/// NULL when out of memory or dimension < 1.
cg_gallery *cg_create(int dimension, cg_storage storage);
void cg_destroy(cg_gallery *gallery);

/// CG_OK or CG_ERR_NOMEM / CG_ERR_FULL.
int cg_reserve(cg_gallery *gallery, int64_t capacity);
/// Gives back spare room beyond the rows held and a sixteenth more (after a load). CG_OK or CG_ERR_NOMEM.
int cg_trim(cg_gallery *gallery);
/// CG_OK (inserted), CG_REPLACED (template id existed), or an error.
int cg_upsert(cg_gallery *gallery, const uint8_t template_id[16], const uint8_t user_id[16],
              const float *embedding);
/// 1 when removed, 0 when absent.
int cg_remove(cg_gallery *gallery, const uint8_t template_id[16]);
/// Number of templates removed.
int64_t cg_remove_user(cg_gallery *gallery, const uint8_t user_id[16]);

int64_t cg_count(cg_gallery *gallery);
/// Bytes allocated for templates: vectors, norms, scales, ids and the id index.
int64_t cg_memory_bytes(cg_gallery *gallery);

/// Writes min(k, count) matches in ascending exact distance to `out` (room for k)
/// and returns how many. Returns 0 for a query with a non-finite value.
int cg_search(cg_gallery *gallery, const float *query, int k, cg_match *out);
/// `queries` holds nq rows of `dimension` floats; `out` has room for nq*k,
/// query i's matches start at out + i*k. Returns min(k, count), the same for
/// every query. Every query must be finite (the wrapper filters the others).
int cg_search_batch(cg_gallery *gallery, const float *queries, int nq, int k, cg_match *out);

void cg_set_kernel(cg_gallery *gallery, cg_kernel kernel);
/// Name of the kernel a search would use now, for benchmark reports.
const char *cg_kernel_name(cg_gallery *gallery, int batch);
/// Name of OpenBLAS's CPU kernel ("Zen", "Haswell", ...).
const char *cg_blas_core_name(void);

/// Sums `count` floats with the widest loads the CPU has; used to measure
/// memory read bandwidth next to the search figures.
double cg_sum_floats(const float *values, size_t count);

#ifdef __cplusplus
}
#endif
