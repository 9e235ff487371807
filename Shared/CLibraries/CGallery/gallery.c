// 1:N face gallery: see include/gallery.h.
//
// Layout (structure of arrays, row i is one template):
//   codes         count x dim, float32 / float16 / int8, 64-byte aligned
//   norms         ||x_i||^2 of the vector as stored (after quantisation)
//   scales        int8 only: x_i ~= scales[i] * codes_i
//   template_ids  count x 16 bytes, user_ids count x 16 bytes
//   slots         open-addressing index template id -> row (linear probing,
//                 backward-shift deletion, load factor <= 1/2)
//
// Search ranks by ||x||^2 - 2 q.x (||q||^2 is the same for every row), keeps a
// bounded max-heap of the best candidates, then recomputes sum((q - x)^2)
// directly for the candidates and returns the k nearest by that exact value.
#define _GNU_SOURCE
#include "gallery.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define CG_X86 1
#define SIMD_TARGET __attribute__((target("avx2,fma,f16c")))
#endif

enum { SCAN_BLOCK = 256, BATCH_BLOCK = 32, BLAS_BLOCK = 8192, BLAS_BATCH_BLOCK = 2048 };

struct cg_gallery {
    pthread_rwlock_t lock;
    int dim;
    cg_storage storage;
    cg_kernel kernel;
    size_t row_bytes;
    int64_t count, capacity;
    uint8_t *codes;
    float *norms;
    float *scales;
    uint8_t *template_ids;
    uint8_t *user_ids;
    int32_t *slots;
    int64_t slot_count;   // 0 or a power of two
};

// ---------------------------------------------------------------- CPU features

static int simd_supported(void) {
#if defined(CG_X86)
    static int cached = -1;
    int value = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (value >= 0) return value;
    unsigned a, b, c, d;
    int ok = 0;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
        if (fma && osxsave && avx && f16c) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            if ((lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) ok = (b >> 5) & 1;
        }
    }
    __atomic_store_n(&cached, ok, __ATOMIC_RELAXED);
    return ok;
#else
    return 0;
#endif
}

// ---------------------------------------------------------------- half floats

// Round to nearest even, as the F16C instructions do; out-of-range values are
// rejected before this is called.
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7fffffu;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - exp;
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)half;
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            int e = -1;
            do { e++; mant <<= 1; } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

// ---------------------------------------------------------------- rows

static void decode_row(const cg_gallery *g, int64_t row, float *out) {
    const uint8_t *src = g->codes + (size_t)row * g->row_bytes;
    int d = g->dim;
    switch (g->storage) {
    case CG_STORAGE_FLOAT32: memcpy(out, src, (size_t)d * 4); break;
    case CG_STORAGE_FLOAT16: {
        const uint16_t *h = (const uint16_t *)src;
        for (int j = 0; j < d; j++) out[j] = f16_to_f32(h[j]);
        break;
    }
    case CG_STORAGE_INT8: {
        const int8_t *c = (const int8_t *)src;
        float s = g->scales[row];
        for (int j = 0; j < d; j++) out[j] = s * (float)c[j];
        break;
    }
    }
}

// Encodes one embedding into row form; returns its stored norm through *norm.
static int encode_row(const cg_gallery *g, const float *x, uint8_t *code, float *scale, float *norm) {
    int d = g->dim;
    float maxabs = 0;
    for (int j = 0; j < d; j++) {
        if (!isfinite(x[j])) return CG_ERR_NONFINITE;
        float a = fabsf(x[j]);
        if (a > maxabs) maxabs = a;
    }
    double sum = 0;
    switch (g->storage) {
    case CG_STORAGE_FLOAT32:
        memcpy(code, x, (size_t)d * 4);
        for (int j = 0; j < d; j++) sum += (double)x[j] * x[j];
        break;
    case CG_STORAGE_FLOAT16: {
        if (maxabs > 65504.0f) return CG_ERR_NONFINITE;
        uint16_t *h = (uint16_t *)code;
        for (int j = 0; j < d; j++) {
            h[j] = f32_to_f16(x[j]);
            double v = f16_to_f32(h[j]);
            sum += v * v;
        }
        break;
    }
    case CG_STORAGE_INT8: {
        int8_t *c = (int8_t *)code;
        float s = maxabs / 127.0f;
        *scale = s;
        for (int j = 0; j < d; j++) {
            long q = s > 0 ? lrintf(x[j] / s) : 0;
            if (q > 127) q = 127;
            if (q < -127) q = -127;
            c[j] = (int8_t)q;
            double v = (double)s * (double)q;
            sum += v * v;
        }
        break;
    }
    }
    *norm = (float)sum;
    return CG_OK;
}

// ---------------------------------------------------------------- id index

static uint64_t id_hash(const uint8_t id[16]) {
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    uint64_t h = a ^ (b * 0x9e3779b97f4a7c15ull);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static const uint8_t *tid_of(const cg_gallery *g, int64_t row) { return g->template_ids + (size_t)row * 16; }

// Slot index holding `id`, or -1.
static int64_t slot_find(const cg_gallery *g, const uint8_t id[16]) {
    if (g->slot_count == 0) return -1;
    int64_t mask = g->slot_count - 1;
    for (int64_t i = (int64_t)(id_hash(id) & (uint64_t)mask);; i = (i + 1) & mask) {
        int32_t row = g->slots[i];
        if (row < 0) return -1;
        if (memcmp(tid_of(g, row), id, 16) == 0) return i;
    }
}

static void slot_insert(int32_t *slots, int64_t slot_count, const uint8_t id[16], int32_t row) {
    int64_t mask = slot_count - 1;
    int64_t i = (int64_t)(id_hash(id) & (uint64_t)mask);
    while (slots[i] >= 0) i = (i + 1) & mask;
    slots[i] = row;
}

// Backward-shift deletion keeps every probe chain unbroken without tombstones.
static void slot_delete(cg_gallery *g, int64_t i) {
    int64_t mask = g->slot_count - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        int32_t row = g->slots[j];
        if (row < 0) break;
        int64_t home = (int64_t)(id_hash(tid_of(g, row)) & (uint64_t)mask);
        int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        g->slots[i] = row;
        i = j;
    }
    g->slots[i] = -1;
}

static int ensure_slots(cg_gallery *g, int64_t rows) {
    if (rows * 2 <= g->slot_count) return CG_OK;
    int64_t want = 64;
    while (want < rows * 2) want *= 2;
    int32_t *slots = malloc((size_t)want * sizeof(int32_t));
    if (!slots) return CG_ERR_NOMEM;
    memset(slots, 0xff, (size_t)want * sizeof(int32_t));
    for (int64_t r = 0; r < g->count; r++) slot_insert(slots, want, tid_of(g, r), (int32_t)r);
    free(g->slots);
    g->slots = slots;
    g->slot_count = want;
    return CG_OK;
}

// ---------------------------------------------------------------- storage

// Moves the rows to arrays of `capacity` (at least the rows held): grows, or trims what is spare.
static int resize_rows(cg_gallery *g, int64_t capacity) {
    if (capacity < g->count) capacity = g->count;
    if (capacity == g->capacity) return CG_OK;
    if (capacity > INT32_MAX) return CG_ERR_FULL;
    size_t used = (size_t)g->count;
    // Allocate everything first so a failure leaves the gallery untouched.
    uint8_t *codes = aligned_alloc(64, (((size_t)capacity * g->row_bytes) + 63) & ~(size_t)63);
    float *norms = aligned_alloc(64, (((size_t)capacity * 4) + 63) & ~(size_t)63);
    float *scales = g->storage == CG_STORAGE_INT8 ? aligned_alloc(64, (((size_t)capacity * 4) + 63) & ~(size_t)63) : NULL;
    uint8_t *tids = malloc((size_t)capacity * 16), *uids = malloc((size_t)capacity * 16);
    if (!codes || !norms || !tids || !uids || (g->storage == CG_STORAGE_INT8 && !scales)) {
        free(codes); free(norms); free(scales); free(tids); free(uids);
        return CG_ERR_NOMEM;
    }
    if (used) {
        memcpy(codes, g->codes, used * g->row_bytes);
        memcpy(norms, g->norms, used * 4);
        if (scales) memcpy(scales, g->scales, used * 4);
        memcpy(tids, g->template_ids, used * 16);
        memcpy(uids, g->user_ids, used * 16);
    }
    free(g->codes); free(g->norms); free(g->scales); free(g->template_ids); free(g->user_ids);
    g->codes = codes; g->norms = norms; g->scales = scales; g->template_ids = tids; g->user_ids = uids;
    g->capacity = capacity;
    return CG_OK;
}

cg_gallery *cg_create(int dimension, cg_storage storage) {
    if (dimension < 1 || storage < CG_STORAGE_FLOAT32 || storage > CG_STORAGE_INT8) return NULL;
    cg_gallery *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    // glibc prefers readers by default: a steady stream of searches would
    // starve an enrolment forever.
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int rc = pthread_rwlock_init(&g->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0) { free(g); return NULL; }
    g->dim = dimension;
    g->storage = storage;
    g->kernel = CG_KERNEL_AUTO;
    g->row_bytes = (size_t)dimension * (storage == CG_STORAGE_FLOAT32 ? 4 : storage == CG_STORAGE_FLOAT16 ? 2 : 1);
    return g;
}

void cg_destroy(cg_gallery *g) {
    if (!g) return;
    pthread_rwlock_destroy(&g->lock);
    free(g->codes); free(g->norms); free(g->scales); free(g->template_ids); free(g->user_ids); free(g->slots);
    free(g);
}

int cg_reserve(cg_gallery *g, int64_t capacity) {
    pthread_rwlock_wrlock(&g->lock);
    int rc = capacity > g->capacity ? resize_rows(g, capacity) : CG_OK;
    if (rc == CG_OK) rc = ensure_slots(g, capacity);
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

int cg_upsert(cg_gallery *g, const uint8_t tid[16], const uint8_t uid[16], const float *embedding) {
    // Encode outside the lock: searches wait only for the copy.
    uint8_t stack_code[1024];
    uint8_t *code = g->row_bytes <= sizeof stack_code ? stack_code : malloc(g->row_bytes);
    if (!code) return CG_ERR_NOMEM;
    float scale = 0, norm = 0;
    int rc = encode_row(g, embedding, code, &scale, &norm);
    if (rc != CG_OK) goto out;

    pthread_rwlock_wrlock(&g->lock);
    int64_t slot = slot_find(g, tid), row;
    if (slot >= 0) {
        row = g->slots[slot];
        rc = CG_REPLACED;
    } else {
        // Doubling while small; by a quarter from a million rows, so a large gallery's spare room stays a quarter at most.
        if (g->count == g->capacity) rc = resize_rows(g, g->capacity < 32 ? 64 : g->capacity + (g->capacity < (1 << 20) ? g->capacity : g->capacity / 4));
        if (rc == CG_OK) rc = ensure_slots(g, g->count + 1);
        if (rc != CG_OK) { pthread_rwlock_unlock(&g->lock); goto out; }
        row = g->count++;
        memcpy(g->template_ids + row * 16, tid, 16);
        slot_insert(g->slots, g->slot_count, tid, (int32_t)row);
    }
    memcpy(g->codes + (size_t)row * g->row_bytes, code, g->row_bytes);
    g->norms[row] = norm;
    if (g->scales) g->scales[row] = scale;
    memcpy(g->user_ids + row * 16, uid, 16);
    pthread_rwlock_unlock(&g->lock);
out:
    if (code != stack_code) free(code);
    return rc;
}

// Caller holds the write lock.
static void remove_at_slot(cg_gallery *g, int64_t slot) {
    int64_t row = g->slots[slot], last = g->count - 1;
    slot_delete(g, slot);
    if (row != last) {
        memcpy(g->codes + (size_t)row * g->row_bytes, g->codes + (size_t)last * g->row_bytes, g->row_bytes);
        g->norms[row] = g->norms[last];
        if (g->scales) g->scales[row] = g->scales[last];
        memcpy(g->template_ids + row * 16, g->template_ids + last * 16, 16);
        memcpy(g->user_ids + row * 16, g->user_ids + last * 16, 16);
        g->slots[slot_find(g, tid_of(g, row))] = (int32_t)row;
    }
    g->count--;
}

int cg_remove(cg_gallery *g, const uint8_t tid[16]) {
    pthread_rwlock_wrlock(&g->lock);
    int64_t slot = slot_find(g, tid);
    if (slot >= 0) remove_at_slot(g, slot);
    pthread_rwlock_unlock(&g->lock);
    return slot >= 0;
}

int64_t cg_remove_user(cg_gallery *g, const uint8_t uid[16]) {
    pthread_rwlock_wrlock(&g->lock);
    int64_t removed = 0;
    for (int64_t r = 0; r < g->count;) {
        if (memcmp(g->user_ids + r * 16, uid, 16) == 0) {
            remove_at_slot(g, slot_find(g, tid_of(g, r)));  // row r now holds the former last row
            removed++;
        } else {
            r++;
        }
    }
    pthread_rwlock_unlock(&g->lock);
    return removed;
}

int64_t cg_count(cg_gallery *g) {
    pthread_rwlock_rdlock(&g->lock);
    int64_t n = g->count;
    pthread_rwlock_unlock(&g->lock);
    return n;
}

int cg_trim(cg_gallery *g) {
    pthread_rwlock_wrlock(&g->lock);
    int64_t room = g->count + g->count / 16 + 64;
    int rc = room < g->capacity ? resize_rows(g, room) : CG_OK;
    pthread_rwlock_unlock(&g->lock);
    return rc;
}

int64_t cg_memory_bytes(cg_gallery *g) {
    pthread_rwlock_rdlock(&g->lock);
    int64_t per_row = (int64_t)g->row_bytes + 4 + (g->scales ? 4 : 0) + 32;
    int64_t bytes = g->capacity * per_row + g->slot_count * 4;
    pthread_rwlock_unlock(&g->lock);
    return bytes;
}

void cg_set_kernel(cg_gallery *g, cg_kernel kernel) {
    pthread_rwlock_wrlock(&g->lock);
    g->kernel = kernel;
    pthread_rwlock_unlock(&g->lock);
}

// ---------------------------------------------------------------- selection

typedef struct { float score; int32_t row; } cand;
typedef struct { cand *heap; int size, cap; } topk;

static inline float topk_bound(const topk *t) { return t->size < t->cap ? INFINITY : t->heap[0].score; }

// Max-heap on score: the root is the worst candidate kept so far.
static void topk_push(topk *t, float score, int32_t row) {
    cand *h = t->heap;
    int i;
    if (t->size < t->cap) {
        i = t->size++;
        while (i > 0) {
            int parent = (i - 1) / 2;
            if (h[parent].score >= score) break;
            h[i] = h[parent];
            i = parent;
        }
    } else {
        if (!(score < h[0].score)) return;
        i = 0;
        for (;;) {
            int l = 2 * i + 1, r = l + 1, big = i;
            float bs = score;
            if (l < t->size && h[l].score > bs) { big = l; bs = h[l].score; }
            if (r < t->size && h[r].score > bs) { big = r; }
            if (big == i) break;
            h[i] = h[big];
            i = big;
        }
    }
    h[i].score = score;
    h[i].row = row;
}

static inline void topk_offer_block(topk *t, const float *scores, int rows, int64_t first_row) {
    float bound = topk_bound(t);
    for (int i = 0; i < rows; i++) {
        if (scores[i] < bound) {
            topk_push(t, scores[i], (int32_t)(first_row + i));
            bound = topk_bound(t);
        }
    }
}

// ---------------------------------------------------------------- scalar kernels

static float dot_scalar(const float *a, const float *b, int d) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int j = 0;
    for (; j + 4 <= d; j += 4) { s0 += a[j] * b[j]; s1 += a[j + 1] * b[j + 1]; s2 += a[j + 2] * b[j + 2]; s3 += a[j + 3] * b[j + 3]; }
    for (; j < d; j++) s0 += a[j] * b[j];
    return (s0 + s1) + (s2 + s3);
}

static void scores_scalar(const cg_gallery *g, const float *q, int64_t first, int rows, float *out, float *tmp) {
    for (int i = 0; i < rows; i++) {
        int64_t r = first + i;
        const float *x;
        if (g->storage == CG_STORAGE_FLOAT32) {
            x = (const float *)(g->codes + (size_t)r * g->row_bytes);
        } else {
            decode_row(g, r, tmp);
            x = tmp;
        }
        out[i] = g->norms[r] - 2.0f * dot_scalar(q, x, g->dim);
    }
}

// ---------------------------------------------------------------- AVX2 kernels

#if defined(CG_X86)
// Lane i of the result is the horizontal sum of a_i.
SIMD_TARGET static inline __m256 hsum8x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5,
                                         __m256 a6, __m256 a7) {
    __m256 t0 = _mm256_hadd_ps(a0, a1), t1 = _mm256_hadd_ps(a2, a3);
    __m256 t2 = _mm256_hadd_ps(a4, a5), t3 = _mm256_hadd_ps(a6, a7);
    t0 = _mm256_hadd_ps(t0, t1);
    t2 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t2, 0x20), _mm256_permute2f128_ps(t0, t2, 0x31));
}

SIMD_TARGET static inline float hsum1(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

SIMD_TARGET static inline __m256 load_f16x8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
SIMD_TARGET static inline __m256 load_i8x8(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

// One row after another (a purely sequential stream, which the hardware
// prefetcher follows best; interleaving eight rows measured ~35% slower),
// two accumulators per row; eight row sums reduced together. dim % 8 == 0.
#define DEFINE_SCAN_SIMD(NAME, ELEM, LOAD, SCALED)                                                         \
    SIMD_TARGET static inline __m256 NAME##_row(const ELEM *x, const float *q, int d) {                    \
        __m256 a = _mm256_setzero_ps(), b = a;                                                             \
        int j = 0;                                                                                         \
        for (; j + 16 <= d; j += 16) {                                                                     \
            a = _mm256_fmadd_ps(LOAD(x + j), _mm256_loadu_ps(q + j), a);                                   \
            b = _mm256_fmadd_ps(LOAD(x + j + 8), _mm256_loadu_ps(q + j + 8), b);                           \
        }                                                                                                  \
        if (j < d) a = _mm256_fmadd_ps(LOAD(x + j), _mm256_loadu_ps(q + j), a);                            \
        return _mm256_add_ps(a, b);                                                                        \
    }                                                                                                      \
    SIMD_TARGET static void NAME(const cg_gallery *g, const float *q, int64_t first, int rows, float *out) { \
        const int d = g->dim;                                                                              \
        const ELEM *x = (const ELEM *)(g->codes + (size_t)first * g->row_bytes);                           \
        const float *norms = g->norms + first;                                                             \
        const __m256 minus2 = _mm256_set1_ps(-2.0f);                                                       \
        int i = 0;                                                                                         \
        for (; i + 8 <= rows; i += 8, x += (size_t)8 * d) {                                                \
            __m256 a0 = NAME##_row(x, q, d), a1 = NAME##_row(x + d, q, d);                                 \
            __m256 a2 = NAME##_row(x + 2 * d, q, d), a3 = NAME##_row(x + 3 * d, q, d);                     \
            __m256 a4 = NAME##_row(x + 4 * d, q, d), a5 = NAME##_row(x + 5 * d, q, d);                     \
            __m256 a6 = NAME##_row(x + 6 * d, q, d), a7 = NAME##_row(x + 7 * d, q, d);                     \
            __m256 dots = hsum8x8(a0, a1, a2, a3, a4, a5, a6, a7);                                         \
            if (SCALED) dots = _mm256_mul_ps(dots, _mm256_loadu_ps(g->scales + first + i));                \
            _mm256_storeu_ps(out + i, _mm256_fmadd_ps(minus2, dots, _mm256_loadu_ps(norms + i)));          \
        }                                                                                                  \
        for (; i < rows; i++, x += d) {                                                                    \
            float dot = hsum1(NAME##_row(x, q, d));                                                        \
            if (SCALED) dot *= g->scales[first + i];                                                       \
            out[i] = norms[i] - 2.0f * dot;                                                                \
        }                                                                                                  \
    }

DEFINE_SCAN_SIMD(scan_f32_simd, float, _mm256_loadu_ps, 0)
DEFINE_SCAN_SIMD(scan_f16_simd, uint16_t, load_f16x8, 0)
DEFINE_SCAN_SIMD(scan_i8_simd, int8_t, load_i8x8, 1)

// Several queries against a block of float rows: 2 rows x 4 queries per step,
// eight accumulators. out is nq x rows (row stride `stride`). dim % 8 == 0.
SIMD_TARGET static void scores_multi_simd(const float *Q, int nq, const float *X, const float *norms, int rows, int d,
                                          float *out, int stride) {
    int qi = 0;
    for (; qi + 4 <= nq; qi += 4) {
        const float *q0 = Q + (size_t)qi * d, *q1 = q0 + d, *q2 = q1 + d, *q3 = q2 + d;
        int r = 0;
        for (; r + 2 <= rows; r += 2) {
            const float *x0 = X + (size_t)r * d, *x1 = x0 + d;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (int j = 0; j < d; j += 8) {
                __m256 v0 = _mm256_loadu_ps(x0 + j), v1 = _mm256_loadu_ps(x1 + j);
                __m256 w = _mm256_loadu_ps(q0 + j);
                a0 = _mm256_fmadd_ps(v0, w, a0); a4 = _mm256_fmadd_ps(v1, w, a4);
                w = _mm256_loadu_ps(q1 + j);
                a1 = _mm256_fmadd_ps(v0, w, a1); a5 = _mm256_fmadd_ps(v1, w, a5);
                w = _mm256_loadu_ps(q2 + j);
                a2 = _mm256_fmadd_ps(v0, w, a2); a6 = _mm256_fmadd_ps(v1, w, a6);
                w = _mm256_loadu_ps(q3 + j);
                a3 = _mm256_fmadd_ps(v0, w, a3); a7 = _mm256_fmadd_ps(v1, w, a7);
            }
            float dots[8];
            _mm256_storeu_ps(dots, hsum8x8(a0, a1, a2, a3, a4, a5, a6, a7));
            for (int t = 0; t < 4; t++) {
                out[(size_t)(qi + t) * stride + r] = norms[r] - 2.0f * dots[t];
                out[(size_t)(qi + t) * stride + r + 1] = norms[r + 1] - 2.0f * dots[4 + t];
            }
        }
        for (; r < rows; r++) {
            const float *x0 = X + (size_t)r * d;
            for (int t = 0; t < 4; t++) {
                __m256 a = _mm256_setzero_ps();
                for (int j = 0; j < d; j += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + j), _mm256_loadu_ps(q0 + (size_t)t * d + j), a);
                out[(size_t)(qi + t) * stride + r] = norms[r] - 2.0f * hsum1(a);
            }
        }
    }
    for (; qi < nq; qi++) {
        const float *q = Q + (size_t)qi * d;
        for (int r = 0; r < rows; r++) {
            const float *x0 = X + (size_t)r * d;
            __m256 a = _mm256_setzero_ps();
            for (int j = 0; j < d; j += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + j), _mm256_loadu_ps(q + j), a);
            out[(size_t)qi * stride + r] = norms[r] - 2.0f * hsum1(a);
        }
    }
}

SIMD_TARGET static void decode_block_simd(const cg_gallery *g, int64_t first, int rows, float *out) {
    const int d = g->dim;
    size_t total = (size_t)rows * d;
    if (g->storage == CG_STORAGE_FLOAT16) {
        const uint16_t *h = (const uint16_t *)(g->codes + (size_t)first * g->row_bytes);
        for (size_t j = 0; j < total; j += 8) _mm256_storeu_ps(out + j, load_f16x8(h + j));
    } else {
        const int8_t *c = (const int8_t *)(g->codes + (size_t)first * g->row_bytes);
        for (int r = 0; r < rows; r++) {
            __m256 s = _mm256_set1_ps(g->scales[first + r]);
            for (int j = 0; j < d; j += 8)
                _mm256_storeu_ps(out + (size_t)r * d + j, _mm256_mul_ps(s, load_i8x8(c + (size_t)r * d + j)));
        }
    }
}

SIMD_TARGET static double cg_sum_floats_simd(const float *v, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(v + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(v + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(v + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(v + i + 24));
    }
    double s = hsum1(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) s += v[i];
    return s;
}
#endif

double cg_sum_floats(const float *v, size_t n) {
#if defined(CG_X86)
    if (simd_supported()) return cg_sum_floats_simd(v, n);
#endif
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) { s0 += v[i]; s1 += v[i + 1]; s2 += v[i + 2]; s3 += v[i + 3]; }
    double s = (double)s0 + s1 + s2 + s3;
    for (; i < n; i++) s += v[i];
    return s;
}

// ---------------------------------------------------------------- search

typedef enum { PATH_SCALAR, PATH_SIMD, PATH_BLAS } scan_path;

static scan_path choose_path(const cg_gallery *g, int batch) {
    int simd = simd_supported() && g->dim % 8 == 0;
    switch (g->kernel) {
    case CG_KERNEL_SCALAR: return PATH_SCALAR;
    case CG_KERNEL_BLAS:
        if (g->storage == CG_STORAGE_FLOAT32) return PATH_BLAS;
        return simd ? PATH_SIMD : PATH_SCALAR;
    case CG_KERNEL_SIMD: return simd ? PATH_SIMD : PATH_SCALAR;
    case CG_KERNEL_AUTO:
    default:
        // Measured here (Benchmarks/RESULTS.md): the single-thread AVX2 scans
        // beat OpenBLAS sgemv for one query and sgemm for a batch of 16, and
        // they keep OpenBLAS's thread pool out of concurrent searches.
        (void)batch;
        return simd ? PATH_SIMD : PATH_SCALAR;
    }
}

const char *cg_kernel_name(cg_gallery *g, int batch) {
    pthread_rwlock_rdlock(&g->lock);
    scan_path p = choose_path(g, batch);
    pthread_rwlock_unlock(&g->lock);
    switch (p) {
    case PATH_BLAS: return batch ? "openblas-sgemm" : "openblas-sgemv";
    case PATH_SIMD: return "avx2-fma";
    default: return "scalar";
    }
}

const char *cg_blas_core_name(void) { return openblas_get_corename(); }

static int pool_size(const cg_gallery *g, int k, int64_t n) {
    // Quantised storage ranks by approximate distances: re-score a wider pool.
    int64_t pool = g->storage == CG_STORAGE_FLOAT32 ? (int64_t)k + 4 : (int64_t)k * 4 < (int64_t)k + 16 ? (int64_t)k + 16 : (int64_t)k * 4;
    return (int)(pool < n ? pool : n);
}

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->score < y->score) return -1;
    if (x->score > y->score) return 1;
    return (x->row > y->row) - (x->row < y->row);
}

// Exact squared distances for the pooled candidates, then the k nearest out.
static int finish(const cg_gallery *g, const float *q, topk *t, int k, cg_match *out, float *tmp) {
    for (int i = 0; i < t->size; i++) {
        int64_t r = t->heap[i].row;
        const float *x;
        if (g->storage == CG_STORAGE_FLOAT32) {
            x = (const float *)(g->codes + (size_t)r * g->row_bytes);
        } else {
            decode_row(g, r, tmp);
            x = tmp;
        }
        double s = 0;
        for (int j = 0; j < g->dim; j++) {
            double diff = (double)q[j] - (double)x[j];
            s += diff * diff;
        }
        t->heap[i].score = (float)s;
    }
    qsort(t->heap, (size_t)t->size, sizeof(cand), cand_cmp);
    int m = t->size < k ? t->size : k;
    for (int i = 0; i < m; i++) {
        int64_t r = t->heap[i].row;
        memcpy(out[i].template_id, g->template_ids + r * 16, 16);
        memcpy(out[i].user_id, g->user_ids + r * 16, 16);
        out[i].distance = sqrtf(t->heap[i].score);
    }
    return m;
}

static void scan_blas(const cg_gallery *g, const float *q, topk *t, float *buf) {
    const int d = g->dim;
    for (int64_t first = 0; first < g->count; first += BLAS_BLOCK) {
        int rows = (int)(g->count - first < BLAS_BLOCK ? g->count - first : BLAS_BLOCK);
        memcpy(buf, g->norms + first, (size_t)rows * 4);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, d, -2.0f, (const float *)g->codes + (size_t)first * d, d, q, 1,
                    1.0f, buf, 1);
        topk_offer_block(t, buf, rows, first);
    }
}

int cg_search(cg_gallery *g, const float *query, int k, cg_match *out) {
    for (int j = 0; j < g->dim; j++)
        if (!isfinite(query[j])) return 0;
    if (k <= 0) return 0;
    int result = 0;
    pthread_rwlock_rdlock(&g->lock);
    int64_t n = g->count;
    if (n == 0) goto done;
    int pool = pool_size(g, k, n);
    scan_path path = choose_path(g, 0);
    size_t buf_floats = path == PATH_BLAS ? BLAS_BLOCK : SCAN_BLOCK;
    cand *heap = malloc((size_t)pool * sizeof(cand));
    float *buf = malloc((buf_floats + (size_t)g->dim) * sizeof(float));
    if (!heap || !buf) { free(heap); free(buf); goto done; }
    float *tmp = buf + buf_floats;
    topk t = {heap, 0, pool};
    if (path == PATH_BLAS) {
        scan_blas(g, query, &t, buf);
    } else {
        for (int64_t first = 0; first < n; first += SCAN_BLOCK) {
            int rows = (int)(n - first < SCAN_BLOCK ? n - first : SCAN_BLOCK);
#if defined(CG_X86)
            if (path == PATH_SIMD) {
                if (g->storage == CG_STORAGE_FLOAT32) scan_f32_simd(g, query, first, rows, buf);
                else if (g->storage == CG_STORAGE_FLOAT16) scan_f16_simd(g, query, first, rows, buf);
                else scan_i8_simd(g, query, first, rows, buf);
            } else
#endif
                scores_scalar(g, query, first, rows, buf, tmp);
            topk_offer_block(&t, buf, rows, first);
        }
    }
    result = finish(g, query, &t, k, out, tmp);
    free(heap);
    free(buf);
done:
    pthread_rwlock_unlock(&g->lock);
    return result;
}

int cg_search_batch(cg_gallery *g, const float *Q, int nq, int k, cg_match *out) {
    if (k <= 0 || nq <= 0) return 0;
    int result = 0;
    const int d = g->dim;
    pthread_rwlock_rdlock(&g->lock);
    int64_t n = g->count;
    if (n == 0) goto done;
    int pool = pool_size(g, k, n);
    scan_path path = choose_path(g, 1);
    int block = path == PATH_BLAS ? BLAS_BATCH_BLOCK : BATCH_BLOCK;
    cand *heaps = malloc((size_t)nq * pool * sizeof(cand));
    topk *tops = malloc((size_t)nq * sizeof(topk));
    float *scores = malloc(((size_t)nq * block + (size_t)block * d + d) * sizeof(float));
    if (!heaps || !tops || !scores) { free(heaps); free(tops); free(scores); goto done; }
    float *decoded = scores + (size_t)nq * block, *tmp = decoded + (size_t)block * d;
    for (int i = 0; i < nq; i++) tops[i] = (topk){heaps + (size_t)i * pool, 0, pool};

    for (int64_t first = 0; first < n; first += block) {
        int rows = (int)(n - first < block ? n - first : block);
        if (path == PATH_BLAS) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, rows, d, -2.0f, Q, d,
                        (const float *)g->codes + (size_t)first * d, d, 0.0f, scores, rows);
            for (int i = 0; i < nq; i++) {
                float *s = scores + (size_t)i * rows;
                for (int r = 0; r < rows; r++) s[r] += g->norms[first + r];
            }
        }
#if defined(CG_X86)
        else if (path == PATH_SIMD) {
            // The block is computed for a while: fetch the next one meanwhile.
            if (first + block < n) {
                const char *next = (const char *)(g->codes + (size_t)(first + block) * g->row_bytes);
                size_t bytes = (size_t)(n - first - block < block ? n - first - block : block) * g->row_bytes;
                for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
            }
            const float *X = (const float *)(g->codes + (size_t)first * g->row_bytes);
            if (g->storage != CG_STORAGE_FLOAT32) {
                decode_block_simd(g, first, rows, decoded);
                X = decoded;
            }
            scores_multi_simd(Q, nq, X, g->norms + first, rows, d, scores, rows);
        }
#endif
        else {
            for (int i = 0; i < nq; i++) scores_scalar(g, Q + (size_t)i * d, first, rows, scores + (size_t)i * rows, tmp);
        }
        for (int i = 0; i < nq; i++) topk_offer_block(&tops[i], scores + (size_t)i * rows, rows, first);
    }
    for (int i = 0; i < nq; i++) result = finish(g, Q + (size_t)i * d, &tops[i], k, out + (size_t)i * k, tmp);
    free(heaps);
    free(tops);
    free(scores);
done:
    pthread_rwlock_unlock(&g->lock);
    return result;
}
