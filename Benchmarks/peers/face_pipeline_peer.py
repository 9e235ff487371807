#!/usr/bin/env python3
"""Peer of the FaceEngine pipeline: the Python `face_recognition` package over dlib (dlib-bin wheel).

Run with the peer virtualenv (face_recognition 1.3.0, dlib-bin, numpy):

  face_pipeline_peer.py boxes IMAGE...            one JSON line per image: the default face_recognition
                                                  box (HOG, upsample 1) and its 128-D encoding
  face_pipeline_peer.py time --repeat N IMAGE...  one JSON line per image and variant with the median
                                                  milliseconds of decode, detect, align+embed and total
  face_pipeline_peer.py serve                     reads "VARIANT REPEAT IMAGE" lines on stdin, answers each
                                                  with one such JSON line (lets a benchmark alternate with it)

Timing variants:
  default  face_recognition as documented: load_image_file (PIL), face_locations(img) = HOG on the full
           image upsampled once (x2), face_encodings(img, boxes) = 5-point shape, 150x150 chip, ResNet.
  matched  the work FaceEngine does by default: PIL decode, HOG without upsampling on a copy reduced to a
           longest side of 1024 (box average over whole factors, then bilinear), boxes mapped back,
           5-point shape, chip and ResNet on the full image.
"""
import json
import statistics
import sys
import time

import dlib
import face_recognition
import numpy as np
import PIL.Image

DETECTION_MAX_SIDE = 1024
detector = dlib.get_frontal_face_detector()


def default_pipeline(path):
    t0 = time.perf_counter()
    image = face_recognition.load_image_file(path)
    t1 = time.perf_counter()
    boxes = face_recognition.face_locations(image)  # HOG, number_of_times_to_upsample=1
    t2 = time.perf_counter()
    encodings = face_recognition.face_encodings(image, boxes)  # model="small" (5 points), num_jitters=1
    t3 = time.perf_counter()
    return image, boxes, encodings, (t1 - t0, t2 - t1, t3 - t2)


def reduced(image):
    height, width = image.shape[:2]
    longest = max(width, height)
    if longest <= DETECTION_MAX_SIDE:
        return image, 1.0, 1.0
    scale = DETECTION_MAX_SIDE / longest
    target = (max(1, round(width * scale)), max(1, round(height * scale)))
    factor = max(1, min(width // target[0], height // target[1]))
    picture = PIL.Image.fromarray(image)
    if factor > 1:
        picture = picture.reduce(factor)
    if picture.size != target:
        picture = picture.resize(target, PIL.Image.BILINEAR)
    return np.asarray(picture), width / target[0], height / target[1]


def matched_pipeline(path):
    t0 = time.perf_counter()
    image = face_recognition.load_image_file(path)
    t1 = time.perf_counter()
    small, sx, sy = reduced(image)
    height, width = image.shape[:2]
    boxes = []
    for rect in detector(small, 0):
        left, top = round(rect.left() * sx), round(rect.top() * sy)
        right, bottom = round((rect.right() + 1) * sx) - 1, round((rect.bottom() + 1) * sy) - 1
        boxes.append((max(top, 0), min(right, width - 1), min(bottom, height - 1), max(left, 0)))
    boxes.sort(key=lambda b: (b[1] - b[3]) * (b[2] - b[0]), reverse=True)
    t2 = time.perf_counter()
    encodings = face_recognition.face_encodings(image, boxes[:1])
    t3 = time.perf_counter()
    return image, boxes, encodings, (t1 - t0, t2 - t1, t3 - t2)


def command_boxes(paths):
    for path in paths:
        image, boxes, encodings, _ = default_pipeline(path)
        faces = [{"top": int(t), "right": int(r), "bottom": int(b), "left": int(l), "embedding": [float(v) for v in e]}
                 for (t, r, b, l), e in zip(boxes, encodings)]
        print(json.dumps({"image": path, "width": int(image.shape[1]), "height": int(image.shape[0]), "faces": faces}),
              flush=True)


PIPELINES = {"default": default_pipeline, "matched": matched_pipeline}


def timed(path, variant, repeat):
    pipeline = PIPELINES[variant]
    pipeline(path)  # warm-up: page cache, lazy allocations
    samples = []
    boxes = []
    for _ in range(repeat):
        _, boxes, _, stages = pipeline(path)
        samples.append(stages)
    decode, detect, embed = (statistics.median(s[i] for s in samples) * 1e3 for i in range(3))
    totals = [sum(s) * 1e3 for s in samples]
    return {"image": path, "variant": variant, "faces": len(boxes), "decodeMs": decode, "detectMs": detect,
            "embedMs": embed, "totalMs": statistics.median(totals), "repeat": repeat}


def command_time(paths, repeat):
    for path in paths:
        for variant in PIPELINES:
            print(json.dumps(timed(path, variant, repeat)), flush=True)


def command_serve():
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        fields = line.rstrip("\n").split(" ", 2)
        if len(fields) != 3:
            continue
        variant, repeat, path = fields
        print(json.dumps(timed(path, variant, int(repeat))), flush=True)


def main(argv):
    if len(argv) >= 2 and argv[1] == "boxes":
        command_boxes(argv[2:])
    elif len(argv) >= 4 and argv[1] == "time" and argv[2] == "--repeat":
        command_time(argv[4:], int(argv[3]))
    elif len(argv) == 2 and argv[1] == "serve":
        command_serve()
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
