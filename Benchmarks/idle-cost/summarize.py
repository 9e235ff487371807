#!/usr/bin/env python3
"""summarize.py results.jsonl -- median per setting over rounds."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l); rows[r["setting"]].append(r)
def med(rs, k):
    v = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(v) if v else float("nan")
print(f"{'setting':>9} {'n':>2} {'broker s/20s':>12} {'client s/20s':>12} {'fetch/s/cons':>12} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7}  broker runs")
for s, rs in rows.items():
    print(f"{s:>9} {len(rs):>2} {med(rs,'broker_cpu'):>12.2f} {med(rs,'client_cpu'):>12.2f} {med(rs,'fetch_per_s_per_consumer'):>12.1f} "
          f"{med(rs,'p50'):>7.1f} {med(rs,'p90'):>7.1f} {med(rs,'p99'):>7.1f}  " + " ".join(f"{r['broker_cpu']:.2f}" for r in rs))
