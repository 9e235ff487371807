#!/usr/bin/env python3
"""Kafka client roles for the idle/latency study (run by study.py).

  clients.py idle      BOOT WAIT MINB   -- 6 group consumers (3 groups x 2) + 3 assigned reply readers, poll(100 ms) loops
  clients.py responder BOOT WAIT MINB   -- group consumer on `jobs`, echoes each record to replies[partition from header]
  clients.py requester BOOT WAIT MINB N -- sequential N requests, prints JSON latencies (ms)

MINB: "-" = leave fetch.min.bytes unset (librdkafka default 1), else the explicit value.
Consumer properties mirror Shared/Wrappers/KafkaClient/KafkaConsumer.swift defaultProperties; producer mirrors KafkaProducer.swift.
"""
import json, signal, sys, threading, time, uuid
from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_END

BOOT, WAIT, MINB = sys.argv[2], sys.argv[3], sys.argv[4]
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())


def consumer_conf(group, assign_only=False, stats_cb=None):
    c = {
        "bootstrap.servers": BOOT,
        "group.id": group,
        "enable.auto.offset.store": "false",
        "enable.auto.commit": "false" if assign_only else "true",
        "fetch.wait.max.ms": WAIT,
        "max.partition.fetch.bytes": "10485760",
        "fetch.max.bytes": "52428800",
        "receive.message.max.bytes": "104857600",
        "socket.nagle.disable": "true",
        "session.timeout.ms": "10000",
        "auto.offset.reset": "latest" if assign_only else "earliest",
    }
    if MINB != "-":
        c["fetch.min.bytes"] = MINB
    if stats_cb:
        c["statistics.interval.ms"] = 5000
        c["stats_cb"] = stats_cb
    return c


def producer():
    return Producer({"bootstrap.servers": BOOT, "enable.idempotence": "true", "linger.ms": "0",
                     "message.max.bytes": "10485760"})


def idle():
    # Fetch request counters from librdkafka statistics (for the fetch rate); written to stdout on "mark".
    fetch_counts, lock = {}, threading.Lock()
    assigned = {}

    def mk_stats(name):
        def cb(js):
            d = json.loads(js)
            n = sum(b["req"].get("Fetch", 0) for b in d["brokers"].values() if b.get("nodeid", -1) >= 0)
            with lock:
                fetch_counts[name] = (time.monotonic(), n)
        return cb

    consumers = []
    for g, topic in (("idle-a", "idle.a"), ("idle-b", "idle.b"), ("idle-c", "idle.c")):
        for i in range(2):
            name = f"{g}-{i}"
            c = Consumer(consumer_conf(g, stats_cb=mk_stats(name)))
            c.subscribe([topic], on_assign=lambda cons, parts, name=name: assigned.__setitem__(name, len(parts)))
            consumers.append((name, c))
    for p in (1, 2, 3):  # like KafkaRequester: assign one reply partition at its high watermark
        name = f"reader-{p}"
        c = Consumer(consumer_conf("assign-only." + uuid.uuid4().hex, assign_only=True, stats_cb=mk_stats(name)))
        _, hi = c.get_watermark_offsets(TopicPartition("replies", p), timeout=10)
        c.assign([TopicPartition("replies", p, hi)])
        assigned[name] = 1
        consumers.append((name, c))

    def loop(c):
        while not stop.is_set():
            c.poll(0.1)

    threads = [threading.Thread(target=loop, args=(c,), daemon=True) for _, c in consumers]
    for t in threads:
        t.start()
    while len(assigned) < len(consumers) and not stop.is_set():
        time.sleep(0.1)
    print("READY", flush=True)

    def marks():
        for line in sys.stdin:
            with lock:
                snap = dict(fetch_counts)
            print("MARK " + json.dumps(snap), flush=True)
    threading.Thread(target=marks, daemon=True).start()
    stop.wait()
    for t in threads:
        t.join()
    for _, c in consumers:
        c.close()


def responder():
    c = Consumer(consumer_conf("worker"))
    p = producer()
    ready = threading.Event()
    c.subscribe(["jobs"], on_assign=lambda cons, parts: ready.set())
    announced = False
    while not stop.is_set():
        m = c.poll(0.1)
        p.poll(0)
        if ready.is_set() and not announced:
            print("READY", flush=True)
            announced = True
        if m is None or m.error():
            continue
        part = int(dict(m.headers())["reply-partition"])
        p.produce("replies", key=m.key(), value=m.value(), partition=part)
        p.poll(0)
        c.store_offsets(m)
    p.flush(5)
    c.close()


def requester():
    n = int(sys.argv[5])
    part = 0
    p = producer()
    done = threading.Event()
    stop_dr = threading.Event()

    def serve_dr():  # like KafkaProducer's poll thread
        while not stop_dr.is_set():
            p.poll(0.1)
    threading.Thread(target=serve_dr, daemon=True).start()
    c = Consumer(consumer_conf("assign-only." + uuid.uuid4().hex, assign_only=True))
    _, hi = c.get_watermark_offsets(TopicPartition("replies", part), timeout=10)
    c.assign([TopicPartition("replies", part, hi)])
    lat = []
    warm = 10
    for i in range(n + warm):
        key = uuid.uuid4().hex.encode()
        t0 = time.perf_counter()
        p.produce("jobs", key=key, value=b"x" * 200, headers={"reply-partition": str(part)})
        while True:
            m = c.poll(0.1)
            if m is not None and not m.error() and m.key() == key:
                break
            if time.perf_counter() - t0 > 30:
                print(json.dumps({"error": "timeout", "i": i}), flush=True)
                sys.exit(1)
        if i >= warm:
            lat.append((time.perf_counter() - t0) * 1000)
    stop_dr.set()
    print(json.dumps({"lat_ms": lat}), flush=True)
    c.close()
    p.flush(5)


{"idle": idle, "responder": responder, "requester": requester}[sys.argv[1]]()
