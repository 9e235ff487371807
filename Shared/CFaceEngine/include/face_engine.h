/*
 * FaceGate face engine: image decoding under limits, dlib HOG face detection,
 * 5/68-point landmarks, 128-D ResNet face descriptors, per-face quality.
 *
 * Plain C interface over a C++ implementation. Every function that can fail returns an
 * fe_status and fills the caller's fe_error; nothing here exits or throws.
 * An fe_engine is not thread-safe: use one per thread (several engines in one process
 * share their read-only landmark models).
 */
#ifndef FACEGATE_FACE_ENGINE_H
#define FACEGATE_FACE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fe_status {
    FE_OK = 0,
    /* Not a JPEG or PNG by its magic bytes, or corrupt, or truncated. */
    FE_ERR_IMAGE_FORMAT = 1,
    /* width × height (read from the header) is above the pixel cap; nothing was allocated. */
    FE_ERR_IMAGE_TOO_LARGE = 2,
    /* A model file is missing or unreadable. */
    FE_ERR_MODEL_MISSING = 3,
    /* Out of memory or an unexpected failure inside dlib. */
    FE_ERR_INTERNAL = 4,
    /* A NULL pointer or an out-of-range option. */
    FE_ERR_INVALID_ARGUMENT = 5
} fe_status;

#define FE_ERROR_MESSAGE_SIZE 256

typedef struct fe_error {
    int32_t code;                          /* fe_status */
    int32_t width;                         /* FE_ERR_IMAGE_TOO_LARGE: the header's size; otherwise 0 */
    int32_t height;
    char message[FE_ERROR_MESSAGE_SIZE];   /* NUL-terminated; never contains image bytes */
} fe_error;

typedef enum fe_image_format {
    FE_FORMAT_UNKNOWN = 0,
    FE_FORMAT_JPEG = 1,
    FE_FORMAT_PNG = 2
} fe_image_format;

/* Default cap on width × height of a decoded image. */
#define FE_DEFAULT_MAX_PIXELS 40000000ull
/* Default longest side of the copy that the HOG detector scans. */
#define FE_DEFAULT_DETECTION_MAX_SIDE 1024
#define FE_EMBEDDING_SIZE 128

/* ---- Images ------------------------------------------------------------------------------ */

typedef struct fe_image_info {
    int32_t format;        /* fe_image_format */
    int32_t width;         /* as displayed, i.e. after the EXIF orientation is applied */
    int32_t height;
    int32_t orientation;   /* EXIF orientation 1–8 (1 when absent or for PNG) */
} fe_image_info;

/* Reads only the header: no pixel buffer is allocated. max_pixels == 0 means no cap. */
int32_t fe_image_probe(const uint8_t *data, size_t size, uint64_t max_pixels,
                       fe_image_info *info, fe_error *error);

typedef struct fe_rgb_image {
    int32_t width;
    int32_t height;
    uint8_t *pixels;       /* width × height × 3 bytes, rows top to bottom, R G B; free with fe_rgb_image_free */
} fe_rgb_image;

/* Decodes a JPEG or PNG to 8-bit RGB with the EXIF orientation applied. max_pixels == 0: the default cap. */
int32_t fe_image_decode(const uint8_t *data, size_t size, uint64_t max_pixels,
                        fe_rgb_image *image, fe_error *error);
void fe_rgb_image_free(fe_rgb_image *image);

/* ---- Engine ------------------------------------------------------------------------------ */

typedef struct fe_engine fe_engine;

typedef struct fe_engine_config {
    uint64_t max_pixels;             /* 0: FE_DEFAULT_MAX_PIXELS */
    int32_t detection_max_side;      /* 0: FE_DEFAULT_DETECTION_MAX_SIDE; otherwise at least 80 (the HOG window) */
    int32_t upsample_small_images;   /* nonzero: when nothing is found in an image whose longest side is at
                                        most detection_max_side / 2, scan it once more at twice its size */
} fe_engine_config;

/* Loads shape_predictor_5_face_landmarks.dat, shape_predictor_68_face_landmarks.dat and
   dlib_face_recognition_resnet_model_v1.dat from model_directory. Returns NULL on failure. */
/* OpenBLAS threads for the whole process. A pool of engines already keeps every core busy; BLAS
 * threads on top of it only compete with each other (measured: 6.7 vs 9.5 images/s with 2 engines). */
void fe_set_blas_threads(int32_t threads);

fe_engine *fe_engine_create(const char *model_directory, const fe_engine_config *config, fe_error *error);
void fe_engine_destroy(fe_engine *engine);

typedef struct fe_analyze_options {
    int32_t embeddings;      /* nonzero: 128-D descriptors for the first max_faces faces */
    int32_t landmarks68;     /* nonzero: 68-point landmarks for the first max_faces faces */
    int32_t max_faces;       /* how many faces (largest first) get descriptors / 68 landmarks */
} fe_analyze_options;

typedef struct fe_point {
    double x;
    double y;
} fe_point;

typedef struct fe_face {
    /* Box in the (oriented) image, dlib convention: right and bottom are inclusive. */
    int64_t left;
    int64_t top;
    int64_t right;
    int64_t bottom;
    double detector_score;             /* HOG detector confidence; > 0 means above the default threshold */
    fe_point landmarks5[5];            /* dlib 5-point order: outer and inner corner of the eye on the image's right,
                                          outer and inner corner of the eye on the image's left, base of the nose */
    int32_t has_landmarks68;
    fe_point landmarks68[68];
    int32_t has_embedding;
    float embedding[FE_EMBEDDING_SIZE];
    /* Quality. */
    int32_t face_width;                /* right - left + 1, pixels of the image */
    double sharpness;                  /* variance of the 4-neighbour Laplacian of 0–255 luma on a 150×150 aligned,
                                          area-averaged chip (same geometry as the descriptor's chip) */
    double brightness;                 /* mean luma (BT.601 weights, 0–255) of that chip */
    double yaw;                        /* degrees; positive = subject turned to their left (nose towards image right) */
} fe_face;

typedef struct fe_analysis {
    int32_t width;                     /* oriented image size */
    int32_t height;
    int32_t face_count;
    fe_face *faces;                    /* face_count entries, largest box first; free with fe_analysis_free */
    double decode_ms;                  /* decode + orientation */
    double detect_ms;                  /* downscale + HOG scan(s) */
    double embed_ms;                   /* landmarks, aligned chips, quality, descriptors */
} fe_analysis;

int32_t fe_engine_analyze(fe_engine *engine, const uint8_t *data, size_t size,
                          const fe_analyze_options *options, fe_analysis *analysis, fe_error *error);
void fe_analysis_free(fe_analysis *analysis);

/* Descriptor of the face inside a given box (image coordinates, dlib convention), as dlib's
   face_recognition_model_v1 computes it: 5-point shape in that box, 150×150 chip, padding 0.25, no jitter. */
int32_t fe_engine_embed_box(fe_engine *engine, const uint8_t *data, size_t size,
                            int64_t left, int64_t top, int64_t right, int64_t bottom,
                            float *embedding /* FE_EMBEDDING_SIZE floats */, fe_error *error);

#ifdef __cplusplus
}
#endif

#endif
