"""The fault-injection harness (issue #19): a whole FaceGate under supervision — two gateways behind
scripts/balancer.py, two replicas of every worker — driven at a steady rate with face logins, enrollments, CTID
verifications and kiosk sessions while a seeded schedule SIGKILLs replicas of every service, pauses a matcher past the
request deadline, and restarts the broker and PostgreSQL. Afterwards it waits for recovery and checks that every
request was answered in time with 2xx, a documented 4xx or 503 (never a 500, a refused or reset connection, a hang),
that every enrollment answered 201 is in PostgreSQL and in every matcher's gallery and no failed one left a template,
that no single-use value was used twice, that nothing took effect twice, and that every call is in the audit trail and
every chain verifies.

    scripts/chaos.sh [--seed N] [--requests N] [--faults N] [--profile test|chaos] [--release] [--report]
                     [--rate R] [--clients N] [--fault-kinds KIND,…]

Prints a summary ending with `chaos: N passed, N failed, 0 skipped` (one per invariant); exit status 1 on any
violation. --report appends the figures to Benchmarks/RESULTS.md. Logs, the schedule and report.json stay in
.run/<profile>/chaos/<run>/; the run's database is dropped when every invariant held.
"""

import argparse
import base64
import datetime
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "Client", "python"))
import ctid  # noqa: E402
import stack as stack_module  # noqa: E402
import facegate_dpop  # noqa: E402
import traffic  # noqa: E402

ROOT = stack_module.ROOT
# Fault kinds by their --fault-kinds names.
FAULT_KINDS = {"kill-gateway": "kill auth-gateway", "kill-matcher": "kill matcher-worker", "kill-ctid": "kill ctid-verifier",
               "kill-kiosk": "kill kiosk-orchestrator", "pause-matcher": "pause matcher-worker",
               "restart-broker": "restart broker", "restart-postgres": "restart postgres"}
# How often each flow is started. A face login is ~7 requests, an enrollment ~1.5, a CTID verification ~3, a kiosk
# session ~5: these weights give roughly 30 % of the requests to logins, 25 % each to enrollments and CTID, 20 % to kiosks.
FLOWS = (("login", 0.15), ("enroll", 0.45), ("ctid", 0.25), ("kiosk", 0.15))
REPLICAS = {"auth-gateway": 2, "matcher-worker": 2, "ctid-verifier": 2, "kiosk-orchestrator": 2}
# Seconds: the services' request deadline, the slack allowed on top of it, how long a server stays down when restarted.
DEADLINE = 5
MARGIN = 3
OUTAGE = 2
RECOVERY_LIMIT = 120  # seconds after the traffic for every replica to be ready and every flow answered again
KEPT_RUNS = 10  # run folders (logs, report.json) kept under .run/<profile>/chaos/
# What is checked after the run, in order; each counts as one test.
INVARIANTS = {
    "answered": "every request answered (no refused or reset connection, no hang)",
    "no_server_errors": "no 5xx but 503 SERVICE_UNAVAILABLE",
    "within_deadline": f"every answer within the deadline + margin ({DEADLINE} + {MARGIN} s)",
    "documented_codes": "every 4xx a documented code with its status",
    "documented_answers": "every answer what the API documents for the step",
    "enrollments_durable": "every enrollment answered 201 is in PostgreSQL",
    "no_orphan_templates": "no failed enrollment left a template (beyond enrollments whose answer was lost)",
    "galleries": "every matcher's gallery holds what PostgreSQL holds",
    "single_use": "no single-use value used twice (identity tokens, confirmations, CTID serials)",
    "no_duplicates": "no duplicated effect (kiosk events, idempotent replays, apps, templates per user)",
    "audit": "every call in the audit trail and every chain verifies",
    "recovered": "recovered after the last fault without a restart: every replica ready, every flow answered",
    "no_unplanned_exits": "no service exited on its own (only SIGKILLed replicas restarted)",
    "faults_injected": "every scheduled fault injected",
    "declared_refusals": "every refusal's code declared by its route in the OpenAPI document (gateways since their last start)",
}


def log(message):
    print(f"[chaos] {message}", flush=True)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- options ----------------------------------------------------------------------------------------------------------

def parse(argv=None):
    parser = argparse.ArgumentParser(prog="scripts/chaos.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=300, help="traffic requests (setup and checks not counted)")
    parser.add_argument("--faults", type=int, default=7, help="faults injected during the traffic (7 = one of each kind)")
    parser.add_argument("--fault-kinds", default=",".join(FAULT_KINDS),
                        help="comma list of the kinds to draw from (default all: " + ", ".join(FAULT_KINDS) + ")")
    parser.add_argument("--rate", type=float, default=None, help="requests per second (default: 5, release builds 8)")
    parser.add_argument("--clients", type=int, default=24, help="concurrent client threads")
    parser.add_argument("--profile", default=os.environ.get("FACEGATE_CHAOS_PROFILE", "chaos"), choices=("test", "chaos"))
    parser.add_argument("--release", action="store_true", help="run .build/release instead of .build/debug")
    parser.add_argument("--report", action="store_true", help="append the figures to Benchmarks/RESULTS.md")
    options = parser.parse_args(argv)
    if options.requests < 1 or options.faults < 0 or options.clients < 1:
        parser.error("--requests and --clients must be positive, --faults not negative")
    options.fault_kinds = [kind.strip() for kind in options.fault_kinds.split(",") if kind.strip()]
    unknown = [kind for kind in options.fault_kinds if kind not in FAULT_KINDS]
    if unknown or not options.fault_kinds:
        parser.error(f"unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}")
    if options.rate is None:
        options.rate = 8.0 if options.release else 5.0
    return options


# --- faults -----------------------------------------------------------------------------------------------------------

def schedule(rng, faults, requests, names):
    """(request index, kind, replica number) per fault: spread over the middle of the run, one of each kind first."""
    kinds = [FAULT_KINDS[name] for name in names]
    rng.shuffle(kinds)
    chosen = kinds[:faults] + [rng.choice(kinds) for _ in range(max(0, faults - len(kinds)))]
    plan = []
    for index, kind in enumerate(chosen):
        slot = (index + 0.5 + rng.uniform(-0.3, 0.3)) / max(faults, 1)
        plan.append({"at_request": int(requests * (0.08 + 0.77 * slot)), "kind": kind, "replica": rng.randint(1, 2)})
    return plan


class Injector(threading.Thread):
    """Injects the scheduled faults as the traffic reaches each one's request, then measures how long the stack takes
    to be ready again (every replica's /readyz 200), until the next fault is due."""

    def __init__(self, stack, plan, pacer, profile, origin):
        super().__init__(daemon=True)
        self.stack, self.plan, self.pacer, self.profile, self.origin = stack, plan, pacer, profile, origin
        self.done = []
        self.halt = threading.Event()
        self.last_end = None

    def run(self):
        for number, fault in enumerate(self.plan):
            while self.pacer.issued < fault["at_request"] and not self.halt.is_set():
                time.sleep(0.05)
            if self.halt.is_set():
                return
            record = dict(fault, at=round(time.monotonic() - self.origin, 2), utc=utc_now())
            try:
                record.update(self.inject(fault))
            except Exception as error:  # noqa: BLE001 - a fault that could not be injected is reported, not fatal
                record["error"] = f"{type(error).__name__}: {error}"
            record["ended"] = round(time.monotonic() - self.origin, 2)
            self.last_end = time.monotonic()
            log(f"fault {number + 1}/{len(self.plan)} at {record['at']} s ({record['utc'][11:22]}): {fault['kind']}"
                f"{' ' + record.get('target', '') if record.get('target') else ''}{' FAILED ' + record['error'] if 'error' in record else ''}")
            following = self.plan[number + 1]["at_request"] if number + 1 < len(self.plan) else None
            record["recovery_s"] = self.wait_ready(following)
            self.done.append(record)

    def replica(self, kind, number):
        return next(r for r in self.stack.replicas if r.kind == kind and r.index == number)

    def inject(self, fault):
        action, _, kind = fault["kind"].partition(" ")
        if action == "kill":
            replica = self.replica(kind, fault["replica"])
            pid = self.stack.signal(replica, signal.SIGKILL)
            if pid is None:
                raise RuntimeError(f"{replica.name} had no running process")
            return {"target": replica.name, "pid": pid}
        if action == "pause":
            replica = self.replica(kind, fault["replica"])
            pid = self.stack.signal(replica, signal.SIGSTOP)
            if pid is None:
                raise RuntimeError(f"{replica.name} had no running process")
            try:
                time.sleep(DEADLINE + 3)  # past the request deadline: its jobs must be answered 503 meanwhile
            finally:
                os.kill(pid, signal.SIGCONT)
            return {"target": replica.name, "pid": pid, "paused_s": DEADLINE + 3}
        server = "broker" if kind == "broker" else "postgres"
        done = subprocess.run([os.path.join(ROOT, "scripts", "stack.sh"), f"restart-{server}", self.profile, str(OUTAGE)],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip()[-300:])
        return {"target": f"{self.profile} {server}", "down_s": OUTAGE}

    def wait_ready(self, following):
        started = time.monotonic()
        while not self.halt.is_set():
            if not self.stack.not_ready():
                return round(time.monotonic() - started, 2)
            if following is not None and self.pacer.issued >= following:
                return None  # the next fault came first; the final recovery covers both
            time.sleep(0.25)
        return None


# --- the run ------------------------------------------------------------------------------------------------------------

class Run:
    def __init__(self, options):
        self.options = options
        self.rng = random.Random(options.seed)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        runs = os.path.join(ROOT, ".run", options.profile, "chaos")
        self.workdir = os.path.join(runs, f"{stamp}-seed{options.seed}")
        os.makedirs(self.workdir, exist_ok=True)
        for old in sorted(os.listdir(runs))[:-KEPT_RUNS]:  # the folder names sort by time
            shutil.rmtree(os.path.join(runs, old), ignore_errors=True)
        bin_dir = os.path.join(ROOT, ".build", "release" if options.release else "debug")
        self.stack = stack_module.Stack(self.workdir, bin_dir, REPLICAS, DEADLINE)
        self.recorder = traffic.Recorder(DEADLINE, MARGIN)
        self.t0_utc = datetime.datetime.now(datetime.timezone.utc)  # the wall-clock time of recorder.t0
        self.pacer = traffic.Pacer(options.rate, options.requests)
        self.client = traffic.Client(self.stack.balancer_port, self.recorder, self.pacer)
        self.setup = {"adminKey": self.stack.admin_key}
        self.figures = {}
        self.results = []  # (invariant, ok, details)

    # --- set-up ----------------------------------------------------------------------------------------------------

    def call(self, step, method, path, body=None, headers=None, route=None):
        """A set-up call, tried again while it is answered 503 (the first face jobs wait for the consumer groups)."""
        for attempt in range(4):
            answer = self.client.call("setup", step, method, path, body, headers, traffic=False, route=route)
            if answer.status != 503:
                return answer
            time.sleep(2)
        return answer

    def must(self, answer, status, what):
        if answer.status != status:
            raise RuntimeError(f"{what}: {answer.status or answer.error} {answer.body[:300]!r}")
        return answer

    def admin_json(self, step, method, path, payload, status, route=None):
        headers = {"Authorization": f"Bearer {self.stack.admin_key}", "Content-Type": "application/json"}
        return self.must(self.call(step, method, path, json.dumps(payload).encode(), headers, route=route), status, step)

    def check_documented_codes(self):
        """The harness's table of codes against the ErrorCode enum of the served OpenAPI document."""
        answer = self.must(self.call("openapi", "GET", "/openapi.json"), 200, "GET /openapi.json")
        served = set(answer.json["components"]["schemas"]["ErrorCode"]["enum"])
        if served != traffic.ALL_CODES:
            raise RuntimeError(f"the served ErrorCode enum and Tests/chaos/traffic.py's table differ: "
                               f"unknown here {sorted(served - traffic.ALL_CODES)}, gone there {sorted(traffic.ALL_CODES - served)}")

    def make_app(self, name, people, kiosk=False):
        payload = {"name": name, "modules": {"faceLogin": "formal", "ctid": "formal", "kiosk": "formal" if kiosk else "disabled",
                                             "deviceAuth": "disabled"},
                   "liveness": {"faceLogin": "off", "kiosk": "off"}, "deviceBinding": "header", "deviceBindingPolicy": "employeeNumber"}
        created = self.admin_json("create app", "POST", "/v1/apps", payload, 201).json
        app = {"appId": created["appId"], "appSecret": created["appSecret"], "ctidKey": base64.b64decode(created["ctidKey"]),
               "name": name, "users": {}}
        for person in people:
            number, full_name = traffic.PEOPLE[person]
            user = self.admin_json("create user", "POST", f"/v1/apps/{app['appId']}/users", {"employeeNumber": number, "name": full_name},
                                   201, route="/v1/apps/{appId}/users").json
            app["users"][person] = {"userId": user["userId"], "employeeNumber": number}
            photo = os.path.join(self.stack.images, "obama.jpg" if person == "obama" else "biden.jpg")
            with open(photo, "rb") as handle:
                self.must(self.call("enroll", "POST", f"/v1/apps/{app['appId']}/users/{user['userId']}/faces", handle.read(),
                                    {"Authorization": f"Bearer {self.stack.admin_key}", "Content-Type": "image/jpeg"},
                                    route="/v1/apps/{appId}/users/{userId}/faces"), 201, f"enroll {person}")
        token = self.must(self.call("access token", "POST", "/v1/access-tokens", b"", {"Authorization": traffic.basic(app)}),
                          200, "access token")
        app["accessToken"] = token.json["accessToken"]
        if kiosk:
            # A kiosk is a registered device: its DPoP key signs every kiosk call.
            app["kioskKey"] = facegate_dpop.DeviceKey.generate()
            self.admin_json("register kiosk", "POST", f"/v1/apps/{app['appId']}/kiosks", {"name": "chaos kiosk", "jkt": app["kioskKey"].thumbprint},
                            201, route="/v1/apps/{appId}/kiosks")
        return app

    def register_identities(self, app, count=3):
        """CTID registry entries: `count` name + number identities and Obama's with a portrait (for mode 0x42)."""
        app["registry"] = []
        names = ["张三", "李四", "王五", "赵六", "孙七"]
        for index in range(count + 1):
            first17 = "11010119900307" + f"{index}{self.rng.randint(10, 99)}"  # born 1990-03-07, sequence of three digits
            identity = {"number": ctid.resident_id(first17), "name": names[index % len(names)] if index < count else "奥巴马"}
            payload = {"number": identity["number"], "name": identity["name"], "validDateStart": "20200101", "validDateEnd": "20400101"}
            if index == count:
                with open(os.path.join(self.stack.images, "obama.jpg"), "rb") as handle:
                    payload["photoData"] = base64.b64encode(handle.read()).decode()
                identity["portrait"] = True
            self.admin_json("ctid registry", "POST", f"/v1/apps/{app['appId']}/ctid-registry", payload, 201,
                            route="/v1/apps/{appId}/ctid-registry")
            app["registry"].append(identity)

    def photos(self, app):
        """The photos of each person: the test photos and ImageMagick variants of them, each kept only when the
        operator search finds the right person in an app holding both (a photo the engine cannot use would make
        the flows' answers meaningless)."""
        folder = os.path.join(self.workdir, "photos")
        os.makedirs(folder, exist_ok=True)
        sources = {"obama": ["obama.jpg", "obama2.jpg", "obama3.jpg", "32bit.png"], "biden": ["biden.jpg"]}
        variants = {"obama2.jpg": [["-resize", "80%"], ["-modulate", "115,100,100"], ["-rotate", "5"]],
                    "obama3.jpg": [["-resize", "50%"], ["-resize", "40%", "-quality", "60"]],
                    "biden.jpg": [["-resize", "60%"], ["-modulate", "90,100,100"], ["-rotate", "-4"], ["-flop"], ["-gamma", "1.2"]]}
        candidates = {person: [os.path.join(self.stack.images, name) for name in names] for person, names in sources.items()}
        for person, names in sources.items():
            for name in names:
                for number, operations in enumerate(variants.get(name, [])):
                    out = os.path.join(folder, f"{os.path.splitext(name)[0]}-v{number}.jpg")
                    subprocess.run(["convert", os.path.join(self.stack.images, name), *operations, out], check=True, timeout=60,
                                   capture_output=True)
                    candidates[person].append(out)
        kept, dropped = {}, []
        for person, paths in candidates.items():
            kept[person] = []
            for path in paths:
                with open(path, "rb") as handle:
                    data = handle.read()
                answer = self.call("validate photo", "POST", f"/v1/apps/{app['appId']}/faces/search", data,
                                   {"Authorization": f"Bearer {self.stack.admin_key}", "Content-Type": traffic.image_type(path)},
                                   route="/v1/apps/{appId}/faces/search")
                match = (answer.get("match") or {}) if answer.status == 200 else {}
                if match.get("userId") == app["users"][person]["userId"]:
                    kept[person].append(path)
                else:
                    dropped.append(os.path.basename(path))
        if not all(kept.values()):
            raise RuntimeError(f"no usable photo of someone: kept {kept}, dropped {dropped}")
        self.figures["photos"] = {person: len(paths) for person, paths in kept.items()}
        self.figures["photos_dropped"] = dropped
        return traffic.Photos(kept)

    def prepare(self):
        log(f"work folder {os.path.relpath(self.workdir, ROOT)}; copying binaries from {os.path.relpath(self.stack.source_bin, ROOT)}")
        ctid.self_test()
        self.stack.copy_binaries()
        self.stack.create_database()
        log(f"database {self.stack.db_name}, topic prefix {self.stack.topic_prefix}; starting "
            + ", ".join(f"{n}×{k}" for k, n in REPLICAS.items()) + " under scripts/supervise.sh, the balancer on "
            + f"127.0.0.1:{self.stack.balancer_port}")
        self.figures["startup_s"] = round(self.stack.start(), 1)
        log(f"every replica ready after {self.figures['startup_s']} s")
        self.check_documented_codes()
        auditor = self.admin_json("auditor", "POST", "/v1/auditors", {"name": "chaos auditor", "allApps": True}, 201).json
        self.setup["auditorKey"] = auditor["auditorKey"]
        self.setup["loginApps"] = [self.make_app(f"chaos login {n}", ("obama", "biden")) for n in (1, 2)]
        for app in self.setup["loginApps"]:
            self.register_identities(app)
        self.setup["kioskApps"] = [self.make_app("chaos kiosk", ("obama",), kiosk=True)]
        self.photo_set = self.photos(self.setup["loginApps"][0])
        log(f"set up: 3 apps, CTID registries, photos {self.figures['photos']} (dropped: {self.figures['photos_dropped'] or 'none'})")

    # --- traffic ----------------------------------------------------------------------------------------------------

    def drive(self):
        plan = schedule(self.rng, self.options.faults, self.options.requests, self.options.fault_kinds)
        with open(os.path.join(self.workdir, "schedule.json"), "w") as handle:
            json.dump(plan, handle, indent=1)
        flows = traffic.Traffic(self.client, self.recorder, self.setup, self.photo_set, DEADLINE)
        self.flows = flows
        injector = Injector(self.stack, plan, self.pacer, self.options.profile, self.recorder.t0)
        self.injector = injector
        errors = []

        def worker(number):
            rng = random.Random(f"{self.options.seed}/{number}")
            kinds, weights = zip(*FLOWS)
            while True:
                kind = rng.choices(kinds, weights)[0]
                try:
                    getattr(flows, kind)(rng)
                except traffic.Exhausted:
                    return
                except Exception:  # noqa: BLE001 - a harness fault must not pass for a service fault, nor stop the run
                    errors.append(traceback.format_exc())
                    if len(errors) > 20:
                        self.pacer.stopped.set()
                        return

        log(f"traffic: {self.options.requests} requests at {self.options.rate}/s from {self.options.clients} clients, "
            f"{len(plan)} faults (seed {self.options.seed})")
        threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(self.options.clients)]
        started = time.monotonic()
        self.pacer.start = started
        injector.start()
        for thread in threads:
            thread.start()
        progress = threading.Thread(target=self.progress, args=(threads,), daemon=True)
        progress.start()
        for thread in threads:
            thread.join()
        self.figures["traffic_s"] = round(time.monotonic() - started, 1)
        # Every fault is due before the last request; one still in progress (a pause, a restart) finishes first.
        injector.join(timeout=120)
        injector.halt.set()
        if errors:
            raise RuntimeError(f"{len(errors)} flows failed inside the harness; the first:\n{errors[0]}")
        self.plan = plan

    def progress(self, threads):
        while any(thread.is_alive() for thread in threads):
            time.sleep(15)
            with self.recorder.lock:
                calls = [c for c in self.recorder.calls if c["traffic"]]
            problems = sum(1 for c in calls if c["problem"])
            log(f"  {len(calls)}/{self.options.requests} requests, {sum(1 for c in calls if c['status'] == 503)} × 503, "
                f"{problems} problems, {len(self.injector.done)} faults")

    # --- recovery and checks ----------------------------------------------------------------------------------------

    def first_served(self, kind, since, until=None):
        """Seconds from `since` to the first time a flow of `kind` got through after it (before `until`), or None."""
        with self.recorder.lock:
            times = [t for t in self.recorder.served[kind] if t >= since and (until is None or t < until)]
        return round(min(times) - since, 2) if times else None

    def recover(self):
        """After the traffic: every replica ready, and each kind of flow answered again after the last fault (by the
        traffic itself, or by probes sent now), without restarting anything. Also works out, for each fault, how long
        until every kind of flow was answered again (None when the next fault came first)."""
        since = self.injector.last_end or time.monotonic()
        deadline = time.monotonic() + RECOVERY_LIMIT
        while self.stack.not_ready() and time.monotonic() < deadline:
            time.sleep(0.25)
        not_ready = self.stack.not_ready()
        last = self.injector.done[-1] if self.injector.done else {}
        ready_s = last.get("recovery_s") if last.get("recovery_s") is not None else round(time.monotonic() - since, 2)
        probes = {"login": self.probe_login, "ctid": self.probe_ctid, "kiosk": self.probe_kiosk}
        for kind, probe in probes.items():
            while self.first_served(kind, since) is None and time.monotonic() < deadline:
                if not probe():
                    time.sleep(1)
        answered = {kind: self.first_served(kind, since) for kind in probes}
        recovered = None if None in answered.values() else max(answered.values())
        self.figures["final_recovery"] = {"ready_s": None if not_ready else ready_s,
                                          "not_ready": not_ready, "answered_s": answered, "recovered_s": recovered}
        for number, fault in enumerate(self.injector.done):
            end = self.recorder.t0 + fault["ended"]
            following = self.injector.done[number + 1] if number + 1 < len(self.injector.done) else None
            until = self.recorder.t0 + following["at"] if following else None
            times = [self.first_served(kind, end, until) for kind in probes]
            fault["answering_s"] = None if None in times else max(times)
        return not not_ready and recovered is not None

    def probe_login(self):
        app = self.setup["loginApps"][0]
        name, photo = self.photo_set.pick(self.rng, "obama")
        answer = self.client.call("probe", "face-login", "POST", "/v1/face-login", photo,
                                  {"Authorization": f"Bearer {app['accessToken']}", "X-Device-Id": "probe-" + uuid.uuid4().hex[:8],
                                   "Content-Type": traffic.image_type(name)}, traffic=False)
        if answer.status == 200 and answer.get("status") == "CONFIRM_REQUIRED":
            self.recorder.served_now("login")
            return True
        return False

    def probe_ctid(self):
        app = self.setup["loginApps"][0]
        headers = {"Authorization": f"Bearer {app['accessToken']}", "Content-Type": "application/json", "X-Device-Id": "probe"}
        serial = self.client.call("probe", "serial", "POST", "/v1/ctid/serial-numbers", b'{"authMode":"0x40"}', headers, traffic=False)
        if serial.status != 200:
            return False
        identity = app["registry"][0]
        fields = {"bizSerialNum": serial.get("bizSerialNum"), "randNum": serial.get("randNum"), "authMode": "0x40",
                  "name": identity["name"], "number": identity["number"]}
        answer = self.client.call("probe", "verify", "POST", "/v1/ctid/verifications",
                                  ctid.request_body(app["appId"], app["ctidKey"], fields), headers, traffic=False)
        if answer.status != 200:
            return False
        if json.loads(ctid.open_envelope(answer.json, app["appId"], app["ctidKey"])).get("resultCode") == "0":
            self.recorder.served_now("ctid")
            return True
        return False

    def probe_kiosk(self):
        app = self.setup["kioskApps"][0]
        headers = {"Authorization": f"Bearer {app['accessToken']}"}
        created = self.client.call("probe", "create session", "POST", "/v1/kiosk/sessions", b"", headers, traffic=False, key=app["kioskKey"])
        if created.status != 201:
            return False
        name, photo = self.photo_set.pick(self.rng, "obama")
        selfie = self.client.call("probe", "selfie", "POST", f"/v1/kiosk/sessions/{created.get('interviewId')}/selfie", photo,
                                  dict(headers, **{"X-Interview-Token": created.get("interviewToken"), "Content-Type": traffic.image_type(name)}),
                                  traffic=False, route="/v1/kiosk/sessions/{interviewId}/selfie", key=app["kioskKey"])
        if selfie.status == 200 and selfie.get("state") == "completed":
            self.recorder.served_now("kiosk")
            return True
        return False

    def gallery_counts(self):
        counts = {}
        for replica in self.stack.replicas:
            if replica.kind != "matcher-worker":
                continue
            text = stack_module.http_text(f"http://127.0.0.1:{replica.admin_port}/metrics") or ""
            found = re.search(r"^facegate_gallery_templates(?:\{[^}]*\})? ([0-9.e+]+)$", text, re.M)
            counts[replica.name] = int(float(found.group(1))) if found else None
        return counts

    def wall(self, at):
        """A time of the run (seconds from its start) as the services' logs print it."""
        return (self.t0_utc + datetime.timedelta(seconds=at)).strftime("%H:%M:%S.%f")[:-5]

    def check(self, key, ok, details=""):
        self.results.append((key, bool(ok), details))
        log(f"{'PASS' if ok else 'FAIL'} {INVARIANTS[key]}{': ' + details if details else ''}")

    def checks(self, recovered):
        calls = self.recorder.calls
        db = self.stack.psql

        def problems(kind):
            return [c for c in calls if c["problem"] and kind(c["problem"])]

        unanswered = problems(lambda p: p == "hang" or p == "refused" or p.startswith("reset"))
        server_errors = problems(lambda p: p.startswith("server error"))
        late = problems(lambda p: p == "late")
        undocumented = problems(lambda p: p.startswith("undocumented"))
        sample = lambda items: "; ".join(f"{c['flow']}/{c['step']} {c['method']} {c['route']} → {c['problem']} at {c['at']} s"
                                         f" ({self.wall(c['at'])})" for c in items[:5])
        self.check("answered", not unanswered,
                   f"{len(unanswered)} unanswered: {sample(unanswered)}" if unanswered else f"{len(calls)} calls")
        self.check("no_server_errors", not server_errors,
                   f"{len(server_errors)}: {sample(server_errors)}" if server_errors else "")
        self.check("within_deadline", not late,
                   f"{len(late)} late: {sample(late)}" if late else
                   f"slowest {max((c['elapsed'] for c in calls), default=0):.2f} s")
        self.check("documented_codes", not undocumented,
                   f"{len(undocumented)}: {sample(undocumented)}" if undocumented else "")
        unexpected = self.recorder.unexpected
        self.check("documented_answers", not unexpected,
                   f"{len(unexpected)}: " + "; ".join(f"{u['flow']}/{u['step']} at {u['at']} s ({self.wall(u['at'])}): {u['detail']}"
                                                      for u in unexpected[:5])
                   if unexpected else "")

        undeclared = [f"{replica.name}: {line}" for replica in self.stack.replicas if replica.kind == "auth-gateway"
                      for line in (stack_module.http_text(f"http://127.0.0.1:{replica.admin_port}/metrics") or "").splitlines()
                      if line.startswith("facegate_http_undeclared_refusals_total{")]
        self.check("declared_refusals", not undeclared, "; ".join(undeclared[:5]))

        # Enrollments: PostgreSQL holds exactly what was answered 201, and every matcher holds PostgreSQL.
        templates = {}
        for template_id, user_id in db("SELECT id, user_id FROM face_templates"):
            templates.setdefault(user_id, set()).add(template_id)
        per_user = {}
        for entry in self.recorder.enrollments:
            user = per_user.setdefault(entry["userId"], {"confirmed": set(), "unresolved": 0, "failed": 0})
            if entry["templateId"]:
                user["confirmed"].add(entry["templateId"])
            elif entry["unresolved"]:
                user["unresolved"] += 1
            else:
                user["failed"] += 1
        lost = [(user, t) for user, facts in per_user.items() for t in facts["confirmed"] - templates.get(user, set())]
        extra = {user: len(templates.get(user, set()) - facts["confirmed"]) for user, facts in per_user.items()}
        orphans = {user: n for user, n in extra.items() if n > per_user[user]["unresolved"]}
        unresolved_committed = sum(min(n, per_user[user]["unresolved"]) for user, n in extra.items())
        confirmed_total = sum(len(f["confirmed"]) for f in per_user.values())
        self.figures["enrollments"] = {"logical": len(self.recorder.enrollments), "confirmed_201": confirmed_total,
                                       "failed": sum(f["failed"] for f in per_user.values()),
                                       "unresolved": sum(f["unresolved"] for f in per_user.values()),
                                       "unresolved_that_committed": unresolved_committed, "lost": len(lost),
                                       "orphan_templates": sum(orphans.values())}
        self.check("enrollments_durable", not lost,
                   f"{len(lost)} lost: {lost[:5]}" if lost else f"{confirmed_total} templates answered 201")
        self.check("no_orphan_templates", not orphans,
                   f"{sum(orphans.values())} templates without a 201 on {len(orphans)} users: {list(orphans.items())[:3]}" if orphans
                   else f"{unresolved_committed} of {self.figures['enrollments']['unresolved']} unresolved enrollments committed")

        # Galleries: every matcher's count converges to PostgreSQL's (reconciliation every 2 s), and searches find the
        # enrolled users of the run's apps.
        expected = int(db("SELECT count(*) FROM face_templates")[0][0])
        deadline = time.monotonic() + 60
        counts = self.gallery_counts()
        while any(count != expected for count in counts.values()) and time.monotonic() < deadline:
            time.sleep(1)
            counts = self.gallery_counts()
        # A 503 is the documented "try again" (a matcher may still be rejoining its consumer group after the last
        # fault): it is asked again, once a second for up to 30 s, and counted; only a wrong answer, or a 503 that
        # outlasts that, is a miss.
        misses, unavailable = [], 0
        for app in self.flows.pool.apps[:12]:
            for person, user in app["users"].items():
                if not templates.get(user["userId"]):
                    continue
                name, photo = self.photo_set.pick(self.rng, person)
                for _ in range(2):  # each search lands on one matcher: twice gives both a chance
                    patience = time.monotonic() + 30
                    while True:
                        answer = self.client.call("check", "search", "POST", f"/v1/apps/{app['appId']}/faces/search", photo,
                                                  {"Authorization": f"Bearer {self.stack.admin_key}", "Content-Type": traffic.image_type(name)},
                                                  traffic=False, route="/v1/apps/{appId}/faces/search")
                        if answer.status != 503 or time.monotonic() > patience:
                            break
                        unavailable += 1
                        time.sleep(1)
                    found = (answer.get("match") or {}).get("userId") if answer.status == 200 else None
                    if found != user["userId"]:
                        misses.append(f"{app['name']}/{person}: {answer.status} {found}")
        self.figures["galleries"] = {"database": expected, "matchers": counts, "searches_answered_503": unavailable}
        self.check("galleries", all(c == expected for c in counts.values()) and not misses,
                   f"database {expected}, matchers {counts}" + (f"; searches missed: {misses[:5]}" if misses else "")
                   + (f"; {unavailable} searches answered 503 and were asked again" if unavailable else ""))

        # Single-use values: accepted at most once.
        reused = {kind: [value[:16] for value, uses in values.items() if uses.count("accepted") > 1]
                  for kind, values in self.recorder.uses.items()}
        checked = {kind: len(values) for kind, values in self.recorder.uses.items()}
        second_tries = {kind: sum(1 for uses in values.values() if len(uses) > 1) for kind, values in self.recorder.uses.items()}
        self.figures["single_use"] = {"values": checked, "used_again": second_tries,
                                      "accepted_twice": {k: len(v) for k, v in reused.items()}}
        self.check("single_use", not any(reused.values()),
                   f"{ {k: v for k, v in reused.items() if v} }" if any(reused.values()) else
                   f"{checked}, tried again {second_tries}")

        # Duplicated effects: kiosk events once per step, idempotent replays, apps and templates per user.
        kiosk_bad = [s for s in self.recorder.kiosk_sessions if s["events"] != s["expected"]]
        replay_bad = [r for r in self.recorder.replays if not (r["status"] == 201 and r["replayed"] and r["same"])]
        names = {}
        for (name,) in db("SELECT name FROM apps"):
            names[name] = names.get(name, 0) + 1
        apps_twice = {name: n for name, n in names.items() if n > 1}
        over_limit = [(user, len(ids)) for user, ids in templates.items() if len(ids) > traffic.MAX_FACES]
        duplicates = len(kiosk_bad) + len(replay_bad) + len(apps_twice) + len(over_limit) + sum(orphans.values())
        self.figures["duplicates"] = duplicates + sum(len(v) for v in reused.values())
        self.check("no_duplicates",
                   not (kiosk_bad or replay_bad or apps_twice or over_limit),
                   f"kiosk sessions {kiosk_bad[:3]}, replays {replay_bad[:3]}, apps {apps_twice}, users over the limit {over_limit[:3]}"
                   if (kiosk_bad or replay_bad or apps_twice or over_limit) else
                   f"{len(self.recorder.kiosk_sessions)} kiosk event streams, {len(self.recorder.replays)} replays")

        # Audit trail: every transactionId answered is a row, every 201 enrollment has its row, every chain verifies.
        ids = sorted(self.recorder.transactions)
        present = set()
        for start in range(0, len(ids), 500):
            chunk = ",".join(f"'{i}'" for i in ids[start:start + 500] if re.fullmatch(r"[0-9a-f-]{36}", i))
            if chunk:
                present |= {row[0] for row in db(f"SELECT id FROM transactions WHERE id IN ({chunk})")}
        missing = [i for i in ids if i not in present]
        enrolled_rows = {row[0] for row in db("SELECT detail->>'templateId' FROM transactions WHERE kind = 'face.enroll' AND outcome = 'SUCCESS'")}
        confirmed_ids = {t for f in per_user.values() for t in f["confirmed"]}
        unaudited = confirmed_ids - enrolled_rows
        chains = [row[0] for row in db("SELECT DISTINCT app_id FROM transactions")]
        broken = []
        for app_id in chains:
            answer = self.client.call("check", "audit verify", "GET", f"/v1/audit/verify?appId={app_id}", None,
                                      {"Authorization": f"Bearer {self.setup['auditorKey']}"}, traffic=False, route="/v1/audit/verify")
            if answer.status != 200 or answer.get("ok") is not True:
                broken.append(f"{app_id}: {answer.status} {answer.body[:160]!r}")
        self.check("audit", not (missing or unaudited or broken),
                   f"missing transactions {missing[:5]}, enrollments without a row {sorted(unaudited)[:5]}, chains {broken[:3]}"
                   if (missing or unaudited or broken) else f"{len(ids)} transaction ids found, {len(chains)} chains verified")

        final = self.figures["final_recovery"]
        self.check("recovered", recovered,
                   f"every replica ready {final['ready_s']} s after the last fault, each kind of flow answered again after "
                   f"{final['answered_s']} s" + (f"; not ready: {final['not_ready']}" if final["not_ready"] else ""))

        exits = self.exits()
        unplanned = {name: statuses for name, statuses in exits.items() if any(s != 137 for s in statuses)}
        self.figures["restarts"] = {name: len(statuses) for name, statuses in exits.items() if statuses}
        self.check("no_unplanned_exits", not unplanned,
                   f"{unplanned}" if unplanned else f"restarts {self.figures['restarts']}")

        failed_faults = [f for f in self.injector.done if "error" in f]
        self.check("faults_injected", len(self.injector.done) == len(self.plan) and not failed_faults,
                   f"{len(self.injector.done)}/{len(self.plan)} injected, failed: {[f['kind'] + ': ' + f['error'] for f in failed_faults]}"
                   if failed_faults or len(self.injector.done) != len(self.plan) else f"{len(self.plan)} faults")

    def exits(self):
        """Each replica's exit statuses, from supervise.sh's `exited with status N; restart K` lines."""
        found = {}
        for replica in self.stack.replicas:
            with open(os.path.join(self.stack.logs, f"{replica.name}.log"), errors="replace") as handle:
                found[replica.name] = [int(s) for s in re.findall(r"^exited with status (\d+); restart", handle.read(), re.M)]
        return found

    # --- report -----------------------------------------------------------------------------------------------------

    def summarize(self):
        calls = [c for c in self.recorder.calls if c["traffic"]]
        statuses = {}
        for c in calls:
            key = str(c["status"]) + (f" {c['code']}" if c["code"] else "") if c["status"] else c["error"]
            statuses[key] = statuses.get(key, 0) + 1
        flows = {}
        for c in calls:
            flows[c["flow"]] = flows.get(c["flow"], 0) + 1
        elapsed = sorted(c["elapsed"] for c in calls if c["status"])
        faults = {}
        for f in self.injector.done:
            entry = faults.setdefault(f["kind"], {"count": 0, "recovery_s": [], "answering_s": []})
            entry["count"] += 1
            entry["recovery_s"].append(f.get("recovery_s"))
            entry["answering_s"].append(f.get("answering_s"))
        unanswered = sum(1 for c in self.recorder.calls if c["problem"] and (c["problem"] in ("hang", "refused") or c["problem"].startswith("reset")))
        self.figures.update({
            "requests": len(calls), "by_flow": flows, "statuses": dict(sorted(statuses.items(), key=lambda kv: -kv[1])),
            "faults": faults,
            "faults_total": len(self.injector.done), "unanswered": unanswered,
            "losses": self.figures.get("enrollments", {}).get("lost", 0),
            "p50_s": round(statistics.median(elapsed), 3) if elapsed else None,
            "p99_s": round(elapsed[int(len(elapsed) * 0.99) - 1], 3) if elapsed else None,
            "rate": round(len(calls) / self.figures["traffic_s"], 2) if self.figures.get("traffic_s") else None,
            "passed": sum(1 for r in self.results if r[1]), "failed": sum(1 for r in self.results if not r[1]),
        })
        with open(os.path.join(self.workdir, "report.json"), "w") as handle:
            json.dump({"options": vars(self.options), "started_utc": self.t0_utc.isoformat(), "figures": self.figures,
                       "faults": self.injector.done,
                       "invariants": [{"name": INVARIANTS[n], "ok": ok, "details": d} for n, ok, d in self.results],
                       "unexpected": self.recorder.unexpected, "enrollments": self.recorder.enrollments}, handle, indent=1, default=str)
        with open(os.path.join(self.workdir, "calls.jsonl"), "w") as handle:
            for c in self.recorder.calls:
                handle.write(json.dumps(c) + "\n")
        f = self.figures
        log(f"{f['requests']} requests in {f.get('traffic_s')} s ({f['rate']}/s), p50 {f['p50_s']} s, p99 {f['p99_s']} s; by flow {f['by_flow']}")
        log(f"answers: {f['statuses']}")
        log(f"faults: {f['faults_total']} — " + ", ".join(f"{k} ×{v['count']} (ready again after {v['recovery_s']} s, "
                                                           f"every flow answered again after {v['answering_s']} s)"
                                                           for k, v in f["faults"].items()))
        log(f"final recovery: {f['final_recovery']}")
        log(f"lost {f['losses']}, duplicated {f['duplicates']}, unanswered {f['unanswered']}; enrollments {f['enrollments']}")

    def append_results(self):
        """A section of Benchmarks/RESULTS.md in its usual shape: machine and date, then tables."""
        f = self.figures
        cpu = ""
        try:
            cpu = next((line.split(":", 1)[1].strip() for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
                        if line.startswith("Model name")), "")
        except OSError:
            pass
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
        build = "release" if self.options.release else "debug"
        lines = ["", "## Fault injection (`scripts/chaos.sh`)", "",
                 f"### {stamp} — {platform.machine()}, {cores} cores (nproc), {cpu}; {platform.system()} {platform.release()}",
                 f"`scripts/chaos.sh --seed {self.options.seed} --requests {self.options.requests} --faults {self.options.faults}"
                 f"{'' if len(self.options.fault_kinds) == len(FAULT_KINDS) else ' --fault-kinds ' + ','.join(self.options.fault_kinds)}"
                 f"{' --release' if self.options.release else ''} --profile {self.options.profile}` ({build} build): 2 gateways behind "
                 f"scripts/balancer.py, 2 matchers, 2 ctid-verifiers, 2 kiosk-orchestrators under scripts/supervise.sh on the "
                 f"`{self.options.profile}` profile's PostgreSQL and broker; request deadline {DEADLINE} s (+ {MARGIN} s margin); "
                 f"{self.options.clients} client threads at {self.options.rate} requests/s; broker and PostgreSQL down {OUTAGE} s per restart, "
                 f"a matcher paused {DEADLINE + 3} s.", "",
                 "| figure | value |", "| --- | --- |",
                 f"| requests (traffic) | {f['requests']} in {f.get('traffic_s')} s ({f['rate']}/s): " +
                 ", ".join(f"{k} {v}" for k, v in f["by_flow"].items()) + " |",
                 f"| latency p50 / p99 | {f['p50_s']} s / {f['p99_s']} s |",
                 f"| faults injected | {f['faults_total']}: " + ", ".join(f"{k} ×{v['count']}" for k, v in f["faults"].items()) + " |",
                 f"| lost (201 enrollments missing) | {f['losses']} |",
                 f"| duplicated (single-use values used twice, effects twice) | {f['duplicates']} |",
                 f"| unanswered (refused, reset, hang) | {f['unanswered']} |",
                 f"| enrollments | {f['enrollments']['logical']}: {f['enrollments']['confirmed_201']} answered 201, "
                 f"{f['enrollments']['failed']} refused (4xx), {f['enrollments']['unresolved']} left 503 after retries "
                 f"({f['enrollments']['unresolved_that_committed']} of them committed) |",
                 f"| single-use values | {f['single_use']['values']}; tried again {f['single_use']['used_again']} |",
                 f"| final recovery (end of the last fault → every replica ready / every kind of flow answered) | "
                 f"{f['final_recovery']['ready_s']} s / {f['final_recovery']['recovered_s']} s |",
                 f"| invariants | {f['passed']} passed, {f['failed']} failed |", "",
                 "| fault | count | every replica ready again after (s, each) | every kind of flow answered again after (s, each) |",
                 "| --- | --- | --- | --- |"]
        each = lambda values: ", ".join("—" if r is None else str(r) for r in values)
        lines += [f"| {k} | {v['count']} | {each(v['recovery_s'])} | {each(v['answering_s'])} |" for k, v in sorted(f["faults"].items())]
        lines += ["", "(— : not before the next fault.)"]
        lines += ["", "| answer | count |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in f["statuses"].items()]
        failed = [(n, d) for n, ok, d in self.results if not ok]
        if failed:
            lines += ["", "Failed invariants:"] + [f"- {INVARIANTS[n]}: {d}" for n, d in failed]
        with open(os.path.join(ROOT, "Benchmarks", "RESULTS.md"), "a") as handle:
            handle.write("\n".join(lines) + "\n")
        log("appended to Benchmarks/RESULTS.md")

    def execute(self):
        """Set-up, traffic with faults, recovery, checks. Answers the list of (invariant, ok, details)."""
        try:
            self.prepare()
            self.drive()
            recovered = self.recover()
            self.checks(recovered)
            self.summarize()
            if self.options.report:
                self.append_results()
        finally:
            self.stack.stop()
            if self.results and all(ok for _, ok, _ in self.results):
                self.stack.drop_database()
            else:
                log(f"kept database {self.stack.db_name} and logs in {os.path.relpath(self.stack.logs, ROOT)}")
            self.stack.remove_files()
        return self.results


def interrupted(signum, frame):
    """SIGTERM (scripts/chaos.sh forwards Ctrl-C as one) ends the run like Ctrl-C: everything started is stopped by pid."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the clean-up short
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None):
    options = parse(argv)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        results = Run(options).execute()
    except KeyboardInterrupt:
        log("interrupted: every process the run started has been stopped")
        return 130
    passed = sum(1 for _, ok, _ in results if ok)
    print(f"chaos: {passed} passed, {len(results) - passed} failed, 0 skipped", flush=True)
    return 0 if results and passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
