"""Peer for the gallery benchmark: 1:N top-k by numpy brute force and FAISS IndexFlatL2
on the same float32 data file the Swift side wrote.

Run by `facegate-bench gallery` (it starts this with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
unset); prints one JSON object on stdout.

  python gallery_peer.py --gallery FILE --queries FILE --dim 128 --sizes 10000,100000,1000000 --k 5 --batch 16
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

try:
    import faiss
except ImportError:  # reported, not fatal: numpy still runs
    faiss = None


def timed(fn, repeats):
    """(median, min) seconds of `repeats` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), result


def per_query(fn, queries):
    """(median, min) seconds of fn(q) over the queries, each timed alone."""
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def figures(single, batch=None, b=1, threads=1):
    out = {"single_ms": 1e3 * single[0], "single_min_ms": 1e3 * single[1], "threads": threads}
    if batch is not None:
        out["batch_ms_per_query"] = 1e3 * batch[0] / b
        out["batch_min_ms_per_query"] = 1e3 * batch[1] / b
    return out


def topk_rows(d2, k):
    """Row indices of the k smallest values of d2 (1-D), ascending."""
    k = min(k, d2.shape[0])
    part = np.argpartition(d2, k - 1)[:k]
    return part[np.argsort(d2[part], kind="stable")]


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    return [
        {key: pool.get(key) for key in ("internal_api", "version", "architecture", "num_threads", "prefix")}
        for pool in threadpool_info()
        if pool.get("user_api") == "blas"
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gallery", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()

    dim, k, b = args.dim, args.k, args.batch
    sizes = [int(s) for s in args.sizes.split(",")]
    everything = np.fromfile(args.gallery, dtype=np.float32).reshape(-1, dim)
    queries = np.fromfile(args.queries, dtype=np.float32).reshape(-1, dim)
    out = {
        "numpy": np.__version__,
        "faiss": getattr(faiss, "__version__", None) if faiss else None,
        "blas": blas_info(),
        "env": {name: os.environ.get(name) for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS")},
        "faiss_threads_default": faiss.omp_get_max_threads() if faiss else None,
        "sizes": [],
    }

    for n in sizes:
        X = everything[:n]
        big = n >= 500_000
        single_q = queries[: (5 if big else 20)]
        entry = {"n": n, "methods": {}}

        # numpy, the usual one-liner: a full n x dim temporary per query.
        naive = per_query(lambda q: topk_rows(((X - q) ** 2).sum(1), k), single_q)
        entry["methods"]["numpy ((X-q)**2).sum(1)"] = figures(naive)

        # numpy with the norms trick: ||x||^2 precomputed, gemv / gemm per query / batch.
        norms = np.einsum("ij,ij->i", X, X)
        def norms_batch():
            Q = queries[:b]
            d2 = norms[None, :] - 2.0 * (Q @ X.T)
            return [topk_rows(row, k) for row in d2]
        single = per_query(lambda q: topk_rows(norms - 2.0 * (X @ q), k), single_q)
        tb, tbmin, _ = timed(norms_batch, 3)
        entry["methods"]["numpy norms trick"] = figures(single, (tb, tbmin), b, "BLAS default")
        # Exact top-k rows for the batch queries (by a direct float64 recomputation of the pool).
        exact = []
        for q in queries[:b]:
            pool = np.argpartition(norms - 2.0 * (X @ q), min(4 * k, n) - 1)[: min(4 * k, n)]
            d = np.sqrt((((X[pool].astype(np.float64)) - q.astype(np.float64)) ** 2).sum(1))
            order = np.argsort(d, kind="stable")[:k]
            exact.append({"rows": pool[order].tolist(), "distances": d[order].tolist()})
        entry["topk"] = exact

        if faiss is not None:
            default_threads = faiss.omp_get_max_threads()
            t0 = time.perf_counter()
            index = faiss.IndexFlatL2(dim)
            index.add(X)
            entry["faiss_add_s"] = time.perf_counter() - t0
            for threads in sorted({1, default_threads}):
                faiss.omp_set_num_threads(threads)
                single = per_query(lambda q: index.search(q[None, :], k), single_q)
                tb, tbmin, (D, I) = timed(lambda: index.search(queries[:b], k), 3)
                name = f"FAISS IndexFlatL2 ({threads} thread{'s' if threads > 1 else ''})"
                entry["methods"][name] = figures(single, (tb, tbmin), b, threads)
            faiss.omp_set_num_threads(default_threads)
            entry["faiss_rows"] = I.tolist()
            del index
        out["sizes"].append(entry)
        print(f"peer: n={n} done", file=sys.stderr, flush=True)

    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
