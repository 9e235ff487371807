#!/usr/bin/env python3
"""Driver: for each setting, fresh tansu broker -> topics -> 9 idle consumers (20 s window: broker CPU,
client CPU, fetch rate) -> responder + sequential requester (round trips). Rounds alternate order.

  study.py PORT ROUNDS OUT.jsonl SETTING...     SETTING = WAIT or WAIT:MINB (e.g. 100:1); "baseline" = no clients
"""
import json, os, signal, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOGS = os.path.join(ROOT, ".run", "idle-cost")
os.makedirs(LOGS, exist_ok=True)
PY = os.path.join(ROOT, ".run", "venv", "bin", "python")
TANSU = os.path.join(ROOT, ".run", "tansu")
TICK = os.sysconf("SC_CLK_TCK")
WINDOW = 20.0
N_REQ = 300
TOPICS = {"jobs": 6, "replies": 16, "idle.a": 12, "idle.b": 6, "idle.c": 6}


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK  # utime, stime (fields 14, 15)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill(); proc.wait()


def run_one(port, setting):
    boot = f"127.0.0.1:{port}"
    pidfile, log = os.path.join(LOGS, "broker.pid"), os.path.join(LOGS, f"broker-{port}.log")
    subprocess.run([f"{HERE}/tansu_up.sh", str(port), pidfile, log], check=True)
    bpid = int(open(pidfile).read())
    procs = []
    res = {"setting": setting, "t": time.time()}
    try:
        for t, n in TOPICS.items():
            subprocess.run([TANSU, "topic", "create", "--broker", f"tcp://{boot}", "--partitions", str(n), t],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if setting == "baseline":
            time.sleep(3)
            b0 = cpu_s(bpid); time.sleep(WINDOW); res["broker_cpu"] = cpu_s(bpid) - b0
            return res
        wait, _, minb = setting.partition(":")
        minb = minb or "-"
        idle = subprocess.Popen([PY, f"{HERE}/clients.py", "idle", boot, wait, minb],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(idle)
        assert idle.stdout.readline().strip() == "READY"
        time.sleep(6)  # settle: rebalances done, a stats sample exists
        idle.stdin.write("m\n"); idle.stdin.flush(); m0 = json.loads(idle.stdout.readline()[5:])
        b0, c0, t0 = cpu_s(bpid), cpu_s(idle.pid), time.monotonic()
        time.sleep(WINDOW)
        b1, c1, t1 = cpu_s(bpid), cpu_s(idle.pid), time.monotonic()
        idle.stdin.write("m\n"); idle.stdin.flush(); m1 = json.loads(idle.stdout.readline()[5:])
        scale = WINDOW / (t1 - t0)
        res["broker_cpu"] = (b1 - b0) * scale
        res["client_cpu"] = (c1 - c0) * scale
        rates = [(m1[k][1] - m0[k][1]) / (m1[k][0] - m0[k][0]) for k in m1 if k in m0 and m1[k][0] > m0[k][0]]
        res["fetch_per_s_per_consumer"] = statistics.median(rates) if rates else None
        # round trips, idle consumers still running (as in the stack)
        resp = subprocess.Popen([PY, f"{HERE}/clients.py", "responder", boot, wait, minb],
                                stdout=subprocess.PIPE, text=True)
        procs.append(resp)
        assert resp.stdout.readline().strip() == "READY"
        time.sleep(1)
        out = subprocess.run([PY, f"{HERE}/clients.py", "requester", boot, wait, minb, str(N_REQ)],
                             capture_output=True, text=True, timeout=900)
        lat = json.loads(out.stdout.strip().splitlines()[-1])["lat_ms"]
        q = statistics.quantiles(lat, n=100, method="inclusive")
        res.update(p50=q[49], p90=q[89], p99=q[98], mean=statistics.mean(lat))
        return res
    finally:
        for p in reversed(procs):
            stop(p)
        os.kill(bpid, signal.SIGKILL)  # tansu ignores SIGTERM (see scripts/stack.sh); in-memory only
        for _ in range(50):
            try:
                os.kill(bpid, 0); time.sleep(0.1)
            except ProcessLookupError:
                break
        os.remove(pidfile)


def main():
    port, rounds, outp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    settings = sys.argv[4:]
    with open(outp, "a") as out:
        for r in range(rounds):
            order = settings if r % 2 == 0 else list(reversed(settings))
            for s in order:
                res = run_one(port, s)
                res["round"] = r
                line = json.dumps(res)
                print(line, flush=True)
                out.write(line + "\n"); out.flush()


if __name__ == "__main__":
    main()
