"""Peer for `facegate-bench scale`: FAISS IndexFlatL2 and IndexScalarQuantizer (SQ8) over the same gallery file the
Swift side wrote (random unit vectors with real SFace templates planted among them), searched with the same probes.

  python scale_peer.py --gallery FILE --probes FILE --truth FILE --dim 128 --timed 32

Prints one JSON object: per index, bytes per template, build seconds, single-query p50/p99 ms over the first `timed`
probes, recall@1 over every probe (the nearest row is a row of the probe's person) and the process's peak RSS.
"""

import argparse
import json
import resource
import statistics
import time

import faiss
import numpy as np


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gallery", required=True)
    ap.add_argument("--probes", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--timed", type=int, default=32)
    args = ap.parse_args()
    dim = args.dim
    gallery = np.memmap(args.gallery, dtype=np.float32, mode="r").reshape(-1, dim)
    probes = np.fromfile(args.probes, dtype=np.float32).reshape(-1, dim)
    # truth: for each probe, the gallery rows of its person (JSON list of lists).
    with open(args.truth) as handle:
        truth = [set(rows) for rows in json.load(handle)]
    out = {"faiss": faiss.__version__, "threads": faiss.omp_get_max_threads(), "n": int(gallery.shape[0]), "indexes": []}
    for name, make in [("FAISS IndexFlatL2", lambda: faiss.IndexFlatL2(dim)),
                       ("FAISS IndexScalarQuantizer SQ8", lambda: faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit))]:
        t0 = time.perf_counter()
        index = make()
        if not index.is_trained:
            index.train(np.ascontiguousarray(gallery[:: max(1, gallery.shape[0] // 200_000)]))
        step = 1_000_000
        for start in range(0, gallery.shape[0], step):
            index.add(np.ascontiguousarray(gallery[start:start + step]))
        build = time.perf_counter() - t0
        times = []
        for q in probes[: args.timed]:
            t = time.perf_counter()
            index.search(q[None, :], 5)
            times.append((time.perf_counter() - t) * 1e3)
        found = 0
        for start in range(0, probes.shape[0], 16):
            _, rows = index.search(probes[start:start + 16], 1)
            found += sum(1 for i, row in enumerate(rows[:, 0]) if int(row) in truth[start + i])
        code = index.sa_code_size() if hasattr(index, "sa_code_size") else dim * 4
        out["indexes"].append({"name": name, "bytes_per_template": code, "build_s": build,
                               "p50_ms": statistics.median(times), "p99_ms": percentile(times, 99),
                               "found": found, "probes": int(probes.shape[0]),
                               "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6})
        del index
    print(json.dumps(out))


if __name__ == "__main__":
    main()
