#!/usr/bin/env python3
"""Peer of FaceEngine's SFace pipeline: the same two ONNX models (YuNet-2023mar detector, SFace-2021dec
recognizer) through opencv-python's own cv2.FaceDetectorYN and cv2.FaceRecognizerSF, on one thread.

Run with the peer virtualenv (opencv-python, numpy):

  sface_pipeline_peer.py features MODEL_DIR IMAGE...   one JSON line per image: the largest face's box and its
                                                      L2-normalised 128-D feature (matched variant)
  sface_pipeline_peer.py serve MODEL_DIR              reads "VARIANT REPEAT IMAGE" lines on stdin and answers each
                                                      with one JSON line: median milliseconds of decode, detect,
                                                      align+embed and total over REPEAT runs (the first request
                                                      for an image and variant is preceded by one untimed run)

The image's bytes are read from disk before the clock starts (FaceEngine is handed bytes in memory too).

Timing variants:
  matched  the work FaceEngine does: cv2.imdecode (EXIF orientation applied), YuNet on a copy whose longest side
           is at most 1024 (INTER_AREA) or enlarged to 320 when smaller (INTER_LINEAR), score threshold 0.6,
           NMS 0.3; the largest face's box and landmarks mapped back to the full image; alignCrop on the full
           image and feature() for that face.
  default  OpenCV's face-recognition sample: FaceDetectorYN with its input size set to the full image, detect,
           alignCrop + feature of the largest face.
"""
import json
import os
import statistics
import sys
import time

import cv2
import numpy as np

DETECTION_MAX_SIDE = 1024
MINIMUM_DETECTION_SIDE = 320
SCORE_THRESHOLD = 0.6
NMS_THRESHOLD = 0.3
TOP_K = 5000

cv2.setNumThreads(1)


class Pipeline:
    def __init__(self, model_dir):
        self.detector = cv2.FaceDetectorYN.create(
            os.path.join(model_dir, "face_detection_yunet_2023mar.onnx"), "", (320, 320),
            SCORE_THRESHOLD, NMS_THRESHOLD, TOP_K)
        self.recognizer = cv2.FaceRecognizerSF.create(os.path.join(model_dir, "face_recognition_sface_2021dec.onnx"), "")

    def detect_largest(self, image, scale):
        """YuNet on `image` (already scaled by `scale`); the largest face in full-image coordinates, or None."""
        height, width = image.shape[:2]
        self.detector.setInputSize((width, height))
        _, faces = self.detector.detect(image)
        if faces is None or len(faces) == 0:
            return None
        face = max(faces, key=lambda f: f[2] * f[3]).copy()
        face[:14] /= scale  # box (x, y, w, h) and the five landmarks; the score stays
        return face

    def describe(self, image, face):
        aligned = self.recognizer.alignCrop(image, face)
        feature = self.recognizer.feature(aligned).reshape(-1)
        return feature / np.linalg.norm(feature)

    def matched(self, data):
        t0 = time.perf_counter()
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        t1 = time.perf_counter()
        height, width = image.shape[:2]
        longest = max(width, height)
        scale = 1.0
        small = image
        if longest > DETECTION_MAX_SIDE:
            scale = DETECTION_MAX_SIDE / longest
            small = cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))), interpolation=cv2.INTER_AREA)
        elif longest < MINIMUM_DETECTION_SIDE:
            scale = MINIMUM_DETECTION_SIDE / longest
            small = cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))), interpolation=cv2.INTER_LINEAR)
        if scale != 1.0:
            # The scale actually applied per axis after rounding; YuNet's output is divided by it.
            scale = small.shape[1] / width
        face = self.detect_largest(small, scale)
        t2 = time.perf_counter()
        feature = self.describe(image, face) if face is not None else None
        t3 = time.perf_counter()
        return face, feature, (t1 - t0, t2 - t1, t3 - t2)

    def default(self, data):
        t0 = time.perf_counter()
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        t1 = time.perf_counter()
        face = self.detect_largest(image, 1.0)
        t2 = time.perf_counter()
        feature = self.describe(image, face) if face is not None else None
        t3 = time.perf_counter()
        return face, feature, (t1 - t0, t2 - t1, t3 - t2)


def command_features(pipeline, paths):
    for path in paths:
        with open(path, "rb") as f:
            face, feature, _ = pipeline.matched(f.read())
        box = None if face is None else [float(v) for v in face[:4]]
        print(json.dumps({"image": path, "box": box, "embedding": None if feature is None else [float(v) for v in feature]}),
              flush=True)


def command_serve(pipeline):
    warmed = set()
    print(json.dumps({"ready": True, "opencv": cv2.__version__, "threads": cv2.getNumThreads()}), flush=True)
    for line in sys.stdin:
        fields = line.rstrip("\n").split(" ", 2)
        if len(fields) != 3:
            continue
        variant, repeat, path = fields
        run = getattr(pipeline, variant)
        with open(path, "rb") as f:
            data = f.read()
        if (variant, path) not in warmed:
            run(data)
            warmed.add((variant, path))
        samples = []
        face = None
        for _ in range(int(repeat)):
            face, _, stages = run(data)
            samples.append(stages)
        decode, detect, embed = (statistics.median(s[i] for s in samples) * 1e3 for i in range(3))
        print(json.dumps({"image": path, "variant": variant, "faces": 0 if face is None else 1, "decodeMs": decode,
                          "detectMs": detect, "embedMs": embed,
                          "totalMs": statistics.median(sum(s) * 1e3 for s in samples), "repeat": int(repeat)}), flush=True)


def main(argv):
    if len(argv) >= 3 and argv[1] == "features":
        command_features(Pipeline(argv[2]), argv[3:])
    elif len(argv) == 3 and argv[1] == "serve":
        command_serve(Pipeline(argv[2]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
