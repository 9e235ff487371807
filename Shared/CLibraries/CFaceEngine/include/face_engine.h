/*
 * FaceGate face engine: image decoding under limits, face detection, 5/68-point landmarks,
 * 128-D face descriptors, per-face quality. Two models sit behind the same calls (fe_model):
 * dlib (HOG detector, 5-point shape, ResNet v1) and SFace (YuNet-2023mar detector with 5 landmarks,
 * SFace-2021dec recognizer, through OpenCV's dnn module). Descriptors of different models are not
 * comparable with each other.
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
/* Default longest side of the copy that the detector scans. */
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

typedef enum fe_model {
    FE_MODEL_DLIB_RESNET_V1 = 0,     /* dlib HOG detector + 5-point shape + ResNet v1 descriptor */
    FE_MODEL_SFACE_2021DEC = 1       /* YuNet-2023mar detector + SFace-2021dec descriptor (OpenCV dnn) */
} fe_model;

/* Model files of FE_MODEL_SFACE_2021DEC (OpenCV Zoo; MIT and Apache-2.0). */
#define FE_SFACE_DETECTOR_FILE "face_detection_yunet_2023mar.onnx"
#define FE_SFACE_RECOGNIZER_FILE "face_recognition_sface_2021dec.onnx"
#define FE_SFACE_DEFAULT_SCORE_THRESHOLD 0.6f
/* What fe_engine_config.flip_augmentation == 0 means: 1 on, 0 off. On because it separated same-person
   from different-person pairs slightly better on the photos measured (d' 7.05 to 7.19 on AT&T/ORL); it runs
   the recognizer twice per face (about +40 ms per face on one core). */
#define FE_SFACE_DEFAULT_FLIP_AUGMENTATION 1

/* SFace engine, detection_first_side: a photo whose detection copy (detection_max_side) is at least twice as long
   is first scanned on a copy reduced to it, only to find its faces; then each face is scanned again at the full
   detection scale in a region around it (a face's longer side beyond it on every side). The whole copy is scanned
   when the first scan finds nothing or the regions would cost more than 80 % of it. Off by default: at 320 it cut
   the detector's pixels by a third on 161 photos over 640 px and the largest face's descriptor stayed the whole
   scan's (median cosine 1.0000), but a face the small copy misses is never looked for (5 of 25 group photos lost
   one, and a face cut by the border was lost beside a near-equal one, which the strict subject rule must see)
   (Benchmarks/RESULTS.md, "SFace detection size"). */
#define FE_SFACE_DEFAULT_DETECTION_FIRST_SIDE 0

/* A zero-filled config means: dlib model, every default. */
typedef struct fe_engine_config {
    uint64_t max_pixels;             /* 0: FE_DEFAULT_MAX_PIXELS */
    int32_t detection_max_side;      /* 0: FE_DEFAULT_DETECTION_MAX_SIDE; otherwise at least 80 (the HOG window) */
    int32_t upsample_small_images;   /* dlib: nonzero: when nothing is found in an image whose longest side is at
                                        most detection_max_side / 2, scan it once more at twice its size.
                                        SFace: ignored (small images are always scanned enlarged, see
                                        fe_engine_analyze) */
    int32_t model;                   /* fe_model; 0 = dlib */
    float detection_score_threshold; /* SFace engine: YuNet score threshold, 0 = default 0.6
                                        (FE_SFACE_DEFAULT_SCORE_THRESHOLD); otherwise in (0, 1) */
    int32_t flip_augmentation;       /* SFace engine: descriptor = normalised mean of the face's and its mirror
                                        image's features. 0: the default (FE_SFACE_DEFAULT_FLIP_AUGMENTATION),
                                        1: on, -1: off. Enrolment and probes must use the same setting. */
    int32_t detection_first_side;    /* SFace engine: 0: FE_SFACE_DEFAULT_DETECTION_FIRST_SIDE (off); -1: off, one
                                        scan at detection_max_side; otherwise at least 160 */
    int32_t own_convolutions;        /* SFace engine: the engine's own convolution layers (convolutions.hpp: 1x1 as
                                        OpenBLAS products, OpenBLAS then on one thread per product for the whole
                                        process; SFace's depthwise 3x3 as a direct loop). 0: the default (on); 1: on;
                                        -1: off, OpenCV's own kernels */
} fe_engine_config;

/* OpenBLAS threads for the whole process. A pool of engines already keeps every core busy; BLAS
 * threads on top of it only compete with each other (measured: 6.7 vs 9.5 images/s with 2 engines). */
void fe_set_blas_threads(int32_t threads);

/* SFace engines: the OpenCV threads an analysis may use when it starts while no other SFace analysis in the
 * process is wanted (threads < 1: every core, the default; 1: always one). While others are wanted (begun, or
 * queued: fe_note_queued_analyses), each runs on one thread, so a pool of engines keeps one analysis per core; an
 * analysis arriving while a lone one runs on several threads waits for it to end. Measured on 2 cores
 * (obama2.jpg): alone 56.5 ms on one thread, 31 ms on two. */
void fe_set_lone_analysis_threads(int32_t threads);
/* SFace analyses queued for an engine (+1 when queued, -1 when an engine takes one up): a pool tells the gate of
 * fe_set_lone_analysis_threads that more are coming. */
void fe_note_queued_analyses(int32_t delta);
/* How many SFace analyses (and box embeddings) so far ran on several threads, and on one. */
void fe_analysis_thread_counts(uint64_t *several_threads, uint64_t *one_thread);
/* For tests and benchmarks: how many of the values of the SFace engine's area reduction of a region of an RGB image
 * (width × height × 3 bytes) to target_width × target_height differ from cv::resize with INTER_AREA's; -1 for a region
 * outside the image or a target larger than it. With repeats > 0, each is also run that many times on one thread, in
 * turn, and the medians go to engine_ms and opencv_ms. */
int64_t fe_area_reduction_compare(const uint8_t *rgb, int32_t width, int32_t height, int32_t x, int32_t y,
                                  int32_t region_width, int32_t region_height, int32_t target_width, int32_t target_height,
                                  int32_t repeats, double *engine_ms, double *opencv_ms);

/* Loads the models of config->model (config NULL: the dlib model, defaults) from model_directory. Returns
   NULL on failure.
   dlib: shape_predictor_5_face_landmarks.dat, shape_predictor_68_face_landmarks.dat and
   dlib_face_recognition_resnet_model_v1.dat, all required.
   SFace: FE_SFACE_DETECTOR_FILE and FE_SFACE_RECOGNIZER_FILE (required, FE_ERR_MODEL_MISSING otherwise), and
   shape_predictor_68_face_landmarks.dat only when present (it is optional: without it analyses never carry
   68-point landmarks; its training data's licence excludes commercial use).
   SFace engines share OpenCV's process-wide thread pool: see fe_set_lone_analysis_threads. */
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
    double detector_score;             /* dlib: HOG detector confidence; > 0 means above the default threshold.
                                          SFace: YuNet score in [0, 1], at least the configured threshold */
    fe_point landmarks5[5];            /* dlib 5-point order: outer and inner corner of the eye on the image's right,
                                          outer and inner corner of the eye on the image's left, base of the nose.
                                          SFace (YuNet) order: the subject's right eye centre (on the image's left),
                                          left eye centre, nose tip, right mouth corner, left mouth corner */
    int32_t has_landmarks68;           /* SFace: only when requested and shape_predictor_68_face_landmarks.dat was
                                          loaded; dlib's 68-point predictor runs in a box derived from YuNet's */
    fe_point landmarks68[68];
    int32_t has_embedding;
    float embedding[FE_EMBEDDING_SIZE];  /* dlib: as the ResNet gives it (not normalised). SFace: L2-normalised,
                                            so cosine = dot product and squared Euclidean distance = 2 - 2 cos */
    /* Quality. */
    int32_t face_width;                /* right - left + 1, pixels of the image. YuNet's box includes the forehead
                                          and is wider than dlib's HOG box for the same face */
    double sharpness;                  /* variance of the 4-neighbour Laplacian of 0–255 luma on an aligned,
                                          area-averaged chip. dlib: 150×150 (same geometry as the descriptor's chip).
                                          SFace: 112×112 in the descriptor chip's geometry. Not comparable across
                                          models */
    double brightness;                 /* mean luma (BT.601 weights, 0–255) of that chip */
    double yaw;                        /* degrees; positive = subject turned to their left (nose towards image right).
                                          SFace: from the 5 landmarks (nose tip against the eyes' and mouth's
                                          midline), scaled to agree with the dlib engine's estimate */
} fe_face;

typedef struct fe_analysis {
    int32_t width;                     /* oriented image size */
    int32_t height;
    int32_t face_count;
    fe_face *faces;                    /* face_count entries, largest box first; free with fe_analysis_free */
    double decode_ms;                  /* decode + orientation */
    double detect_ms;                  /* downscale (or, for SFace, enlargement of small images) + detector */
    double embed_ms;                   /* landmarks, aligned chips, quality, descriptors */
    uint64_t detector_pixels;          /* SFace: pixels the detector network ran on, every scan (padding included);
                                          dlib: 0 */
} fe_analysis;

/* Decodes (same cap, orientation and errors for both models), detects, and describes the faces.
   dlib: HOG on a copy reduced to detection_max_side (see upsample_small_images).
   SFace: YuNet on a copy whose longest side is at most detection_max_side; images whose longest side is below
   320 are enlarged to 320 first. Boxes and landmarks are mapped back to the full image; descriptors and quality
   come from the full image. */
int32_t fe_engine_analyze(fe_engine *engine, const uint8_t *data, size_t size,
                          const fe_analyze_options *options, fe_analysis *analysis, fe_error *error);
void fe_analysis_free(fe_analysis *analysis);

/* Descriptor of the face inside a given box (image coordinates, dlib convention).
   dlib: as dlib's face_recognition_model_v1 computes it: 5-point shape in that box, 150×150 chip,
   padding 0.25, no jitter.
   SFace: the image is analysed as by fe_engine_analyze and the detection whose box overlaps the given box
   most (intersection over union) is described; FE_ERR_INVALID_ARGUMENT when no detection overlaps it. */
int32_t fe_engine_embed_box(fe_engine *engine, const uint8_t *data, size_t size,
                            int64_t left, int64_t top, int64_t right, int64_t bottom,
                            float *embedding /* FE_EMBEDDING_SIZE floats */, fe_error *error);

#ifdef __cplusplus
}
#endif

#endif
