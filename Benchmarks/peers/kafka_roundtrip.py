#!/usr/bin/env python3
"""Python peer of `facegate-bench kafka`: the same request -> reply round trip, written with
confluent-kafka (which bundles librdkafka), so both sides run the same C library against the same broker.

    pip install confluent-kafka==2.16.1
    python3 Benchmarks/peers/kafka_roundtrip.py [--brokers 127.0.0.1:59092] [--requests 2000]
        [--concurrency 32] [--payload-bytes 256] [--results Benchmarks/RESULTS.md | --no-results]
"""
import argparse
import datetime
import os
import platform
import statistics
import threading
import time
import uuid

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

COMMON = {"socket.nagle.disable": True}
PRODUCER = {**COMMON, "enable.idempotence": True, "linger.ms": 0}
CONSUMER = {**COMMON, "fetch.wait.max.ms": 5, "enable.auto.commit": False, "enable.auto.offset.store": False}


def start_poller(producer, stop):
    def run():
        while not stop.is_set():
            producer.poll(0.1)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


class Responder:
    """Echoes each job to the reply address in its headers."""

    def __init__(self, brokers, jobs_topic):
        self.stop = threading.Event()
        self.consumer = Consumer({**CONSUMER, "bootstrap.servers": brokers, "group.id": "peer-responder-" + uuid.uuid4().hex})
        self.consumer.assign([TopicPartition(jobs_topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        self.producer = Producer({**PRODUCER, "bootstrap.servers": brokers})
        start_poller(self.producer, self.stop)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            job = self.consumer.poll(0.1)
            if job is None or job.error():
                continue
            headers = dict(job.headers() or [])
            self.producer.produce(
                headers["reply.topic"].decode(), partition=int(headers["reply.partition"]), key=job.key(), value=job.value())

    def close(self):
        self.stop.set()
        self.thread.join()
        self.consumer.close()
        self.producer.flush(5)


class Requester:
    """One reply partition read from its high watermark; replies matched by key."""

    def __init__(self, brokers, jobs_topic, reply_topic):
        self.jobs_topic, self.reply_topic = jobs_topic, reply_topic
        self.stop = threading.Event()
        self.waiters = {}
        self.lock = threading.Lock()
        self.producer = Producer({**PRODUCER, "bootstrap.servers": brokers})
        start_poller(self.producer, self.stop)
        self.consumer = Consumer({**CONSUMER, "bootstrap.servers": brokers, "group.id": "peer-requester-" + uuid.uuid4().hex})
        _, high = self.consumer.get_watermark_offsets(TopicPartition(reply_topic, 0), timeout=10)
        self.consumer.assign([TopicPartition(reply_topic, 0, high)])
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        while not self.stop.is_set():
            reply = self.consumer.poll(0.1)
            if reply is None or reply.error():
                continue
            with self.lock:
                waiter = self.waiters.pop(reply.key().decode(), None)
            if waiter is not None:
                waiter[1] = reply
                waiter[0].set()

    def request(self, payload, timeout=10.0):
        correlation_id = str(uuid.uuid4())
        waiter = [threading.Event(), None]
        started = time.perf_counter()
        with self.lock:
            self.waiters[correlation_id] = waiter
        self.producer.produce(
            self.jobs_topic, key=correlation_id, value=payload,
            headers=[("reply.topic", self.reply_topic), ("reply.partition", "0")])
        if not waiter[0].wait(timeout):
            raise TimeoutError("no reply")
        return time.perf_counter() - started

    def close(self):
        self.stop.set()
        self.thread.join()
        self.consumer.close()
        self.producer.flush(5)


def summary(label, seconds, wall):
    ms = sorted(s * 1000 for s in seconds)
    pick = lambda p: ms[round(p * (len(ms) - 1))]
    return {"label": label, "n": len(ms), "p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": ms[-1],
            "mean": statistics.fmean(ms), "rps": len(ms) / wall}


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores (nproc), {model}"


def append_results(path, rows, args):
    heading = "## Kafka request–reply round trip (Python confluent-kafka peer)"
    load = open("/proc/loadavg").read().split()[:3]
    block = [
        "",
        f"### {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')} — {machine()}",
        f"confluent-kafka {confluent_kafka.version()[0] if isinstance(confluent_kafka.version(), tuple) else confluent_kafka.version()}, librdkafka {confluent_kafka.libversion()[0]}; broker {args.brokers} "
        f"(tansu, in-memory, same machine); payload {args.payload_bytes} B; load average before the run {' '.join(load)}; "
        "same topology and settings as the Swift run (fetch.wait.max.ms=5, linger.ms=0, idempotent, nagle off); "
        "concurrency with Python threads.",
        "",
        "| run | requests | p50 ms | p90 ms | p99 ms | max ms | req/s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    block += [f"| {r['label']} | {r['n']} | {r['p50']:.2f} | {r['p90']:.2f} | {r['p99']:.2f} | {r['max']:.2f} | {int(r['rps'])} |" for r in rows]
    text = open(path).read() if os.path.exists(path) else "# FaceGate benchmark results\n"
    section = "\n".join(block) + "\n"
    if heading + "\n" in text:
        start = text.index(heading + "\n") + len(heading) + 1
        end = text.find("\n## ", start)
        end = len(text) if end < 0 else end
        text = text[:end] + section + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + heading + "\n" + section
    with open(path, "w") as out:
        out.write(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", default=os.environ.get("FACEGATE_TEST_KAFKA_BROKERS", "127.0.0.1:59092"))
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--payload-bytes", type=int, default=256)
    parser.add_argument("--results", default="Benchmarks/RESULTS.md")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args()

    run_id = uuid.uuid4().hex[:8]
    jobs_topic, reply_topic = f"peer.jobs.{run_id}", f"peer.replies.{run_id}"
    admin = AdminClient({"bootstrap.servers": args.brokers})
    for future in admin.create_topics([NewTopic(jobs_topic, 1), NewTopic(reply_topic, 1)]).values():
        future.result()

    responder = Responder(args.brokers, jobs_topic)
    requester = Requester(args.brokers, jobs_topic, reply_topic)
    payload = b"\x5a" * args.payload_bytes
    for _ in range(min(100, args.requests)):
        requester.request(payload)

    rows = []
    started = time.perf_counter()
    samples = [requester.request(payload) for _ in range(args.requests)]
    rows.append(summary("request → reply, sequential", samples, time.perf_counter() - started))

    per_thread = args.requests // args.concurrency
    results, lock = [], threading.Lock()

    def worker():
        mine = [requester.request(payload) for _ in range(per_thread)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows.append(summary(f"request → reply, {args.concurrency} concurrent", results, time.perf_counter() - started))

    for row in rows:
        print(f"{row['label']}: n={row['n']} p50={row['p50']:.2f} ms p90={row['p90']:.2f} ms "
              f"p99={row['p99']:.2f} ms max={row['max']:.2f} ms {int(row['rps'])} req/s")
    requester.close()
    responder.close()
    if not args.no_results:
        append_results(args.results, rows, args)
        print(f"appended to {args.results}")


if __name__ == "__main__":
    main()
