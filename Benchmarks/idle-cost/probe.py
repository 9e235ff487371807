#!/usr/bin/env python3
"""Single-hop check: does tansu answer a waiting fetch when data arrives, or only at fetch.wait.max.ms?
One consumer assigned to a 1-partition topic at its end; a producer sends N records at random
(un-phase-locked) times; latency = consume time - send time (same host clock).

  probe.py PORT ROUNDS N WAIT...
"""
import json, os, random, signal, statistics, subprocess, sys, threading, time
from confluent_kafka import Consumer, Producer, TopicPartition

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOGS = os.path.join(ROOT, ".run", "idle-cost")
os.makedirs(LOGS, exist_ok=True)
TANSU = os.path.join(ROOT, ".run", "tansu")


def one(port, wait, n):
    boot = f"127.0.0.1:{port}"
    pidfile = os.path.join(LOGS, "probe-broker.pid")
    subprocess.run([f"{HERE}/tansu_up.sh", str(port), pidfile, os.path.join(LOGS, "probe-broker.log")], check=True)
    bpid = int(open(pidfile).read())
    try:
        subprocess.run([TANSU, "topic", "create", "--broker", f"tcp://{boot}", "--partitions", "1", "probe"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c = Consumer({"bootstrap.servers": boot, "group.id": "probe", "enable.auto.commit": "false",
                      "fetch.wait.max.ms": str(wait), "socket.nagle.disable": "true"})
        p = Producer({"bootstrap.servers": boot, "enable.idempotence": "true", "linger.ms": "0"})
        _, hi = c.get_watermark_offsets(TopicPartition("probe", 0), timeout=10)
        c.assign([TopicPartition("probe", 0, hi)])
        lat, got = [], threading.Event()
        sent = {}

        def reader():
            while len(lat) < n:
                m = c.poll(0.1)
                if m is not None and not m.error():
                    lat.append((time.perf_counter() - sent[m.value()]) * 1000)
                    got.set()
        t = threading.Thread(target=reader); t.start()
        time.sleep(2)
        for i in range(n):
            time.sleep(random.uniform(0, 2 * wait + 20) / 1000)  # random phase against the fetch cycle
            got.clear()
            key = str(i).encode()
            sent[key] = time.perf_counter()
            p.produce("probe", value=key); p.poll(0)
            got.wait(10)
        t.join(); c.close(); p.flush(5)
        q = statistics.quantiles(lat, n=100, method="inclusive")
        return {"wait": wait, "p10": q[9], "p50": q[49], "p90": q[89], "max": max(lat), "mean": statistics.mean(lat)}
    finally:
        os.kill(bpid, signal.SIGKILL)
        time.sleep(0.3)
        os.remove(pidfile)


if __name__ == "__main__":
    port, rounds, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    waits = [int(w) for w in sys.argv[4:]]
    for r in range(rounds):
        for w in (waits if r % 2 == 0 else waits[::-1]):
            print(json.dumps(one(port, w, n)), flush=True)
