"""The harness's own FaceGate: copies of the built binaries, a fresh database on a stack profile's PostgreSQL, a topic
prefix of its own on that profile's broker, every replica under scripts/supervise.sh (a SIGKILLed replica comes back)
and scripts/balancer.py in front of the gateways. Every process is stopped by the pid it recorded, never by name."""

import base64
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARIES = ("auth-gateway", "matcher-worker", "ctid-verifier", "kiosk-orchestrator", "facegate")
# Each service's own database login (FaceGateCore's Schema.serviceLogins) and the replicas the harness runs.
LOGINS = {"auth-gateway": "facegate_gateway", "matcher-worker": "facegate_matcher", "ctid-verifier": "facegate_ctid",
          "kiosk-orchestrator": "facegate_kiosk"}
# Started in this order: the workers first, the gateways (which send them jobs) last.
KINDS = ("matcher-worker", "ctid-verifier", "kiosk-orchestrator", "auth-gateway")


def required(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run the harness through scripts/chaos.sh or `make test`")
    return value


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def random_key():
    return base64.b64encode(secrets.token_bytes(32)).decode()


def http_status(url, timeout=1.0):
    """The status of a GET, or None when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, ValueError):
        return None


def http_text(url, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.read().decode()
    except (OSError, ValueError):
        return None


class Replica:
    def __init__(self, kind, index, admin_port, http_port=None):
        self.kind, self.index = kind, index
        self.name = f"{kind}-{index}"
        self.admin_port, self.http_port = admin_port, http_port
        self.supervisor = None  # the supervise.sh process

    def ready(self, timeout=1.0):
        return http_status(f"http://127.0.0.1:{self.admin_port}/readyz", timeout) == 200


class Stack:
    def __init__(self, workdir, bin_dir, replicas, deadline_seconds):
        self.workdir = workdir
        self.source_bin = bin_dir
        self.bin = os.path.join(workdir, "bin")
        self.logs = os.path.join(workdir, "logs")
        self.pids = os.path.join(workdir, "pids")
        self.deadline_seconds = deadline_seconds
        self.superuser_url = required("FACEGATE_TEST_DATABASE_URL")
        self.brokers = required("FACEGATE_TEST_KAFKA_BROKERS")
        self.models = required("FACEGATE_MODEL_DIR")
        self.images = required("FACEGATE_TEST_IMAGES")
        self.db_name = "fg_chaos_" + secrets.token_hex(6)
        self.owner_url = self.database_url("facegate_owner")
        self.topic_prefix = "k" + secrets.token_hex(4) + "."
        self.admin_key = "fgk_chaos_" + secrets.token_urlsafe(18)
        # Fresh token, sealing and audit keys per run; the message-signing, kiosk token and CTID keys are the profile's
        # (scripts/stack.sh makes one set per profile).
        self.keys = {"FACEGATE_SIGNING_KEY": random_key(), "FACEGATE_SEALING_KEY": random_key(),
                     "FACEGATE_AUDIT_KEY": random_key()}
        self.replicas = []
        for kind in KINDS:
            for index in range(1, replicas[kind] + 1):
                http = free_port() if kind == "auth-gateway" else None
                self.replicas.append(Replica(kind, index, free_port(), http))
        self.balancer_port = free_port()
        self.url = f"http://127.0.0.1:{self.balancer_port}"
        self.balancer = None
        self.database_created = False

    # --- set-up ---------------------------------------------------------------------------------------------------

    def database_url(self, role):
        parts = urllib.parse.urlsplit(self.superuser_url)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urllib.parse.urlunsplit((parts.scheme, f"{role}@{host}", "/" + self.db_name, parts.query, ""))

    def psql(self, sql, url=None):
        """Rows of a statement as lists of strings (tab-separated output of psql)."""
        # Row-level security is FORCEd: the owner names the every-app scope to see every app's rows.
        done = subprocess.run(["psql", url or self.owner_url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-tA", "-F", "\t", "-c", sql],
                              env={**os.environ, "PGOPTIONS": "-c facegate.app_id=*"},
                              check=True, capture_output=True, text=True, timeout=120)
        return [line.split("\t") for line in done.stdout.splitlines() if line]

    def copy_binaries(self):
        """The tree may be rebuilt while the harness runs: it runs copies."""
        os.makedirs(self.bin, exist_ok=True)
        for name in BINARIES:
            source = os.path.join(self.source_bin, name)
            if not os.path.exists(source):
                raise RuntimeError(f"{source} is missing: build first (swift build, or swift build -c release with --release)")
            shutil.copy2(source, os.path.join(self.bin, name))

    def create_database(self):
        self.psql(f"CREATE DATABASE {self.db_name} OWNER facegate_owner", url=self.superuser_url)
        self.database_created = True
        env = self.base_environment()
        env["FACEGATE_DATABASE_URL"] = self.owner_url
        subprocess.run([os.path.join(self.bin, "facegate"), "migrate"], env=env, check=True, capture_output=True, timeout=300)

    def base_environment(self):
        """The process environment without any FaceGate setting of the caller's (each service gets exactly its own)."""
        prefixes = ("FACEGATE_", "MATCHER_", "KIOSK_", "CTID_")
        return {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}

    def environment(self, replica):
        """A replica's environment: as scripts/run.sh hands them out, each service gets its own database login and
        message-signing key, only the gateway the token key, only the kiosk-orchestrator its token key, no matcher
        the audit key."""
        kind = replica.kind
        env = self.base_environment()
        env.update({
            "FACEGATE_DATABASE_URL": self.database_url(LOGINS[kind]),
            "FACEGATE_KAFKA_BROKERS": self.brokers,
            "FACEGATE_TOPIC_PREFIX": self.topic_prefix,
            "FACEGATE_KAFKA_IDEMPOTENCE": os.environ.get("FACEGATE_KAFKA_IDEMPOTENCE", "false"),
            "FACEGATE_MODEL_DIR": self.models,
            "FACEGATE_ADMIN_PORT": str(replica.admin_port),
            "FACEGATE_LOG_LEVEL": "info",
            "FACEGATE_SERVICE_KEY": required("FACEGATE_SERVICE_KEY_" + kind.upper().replace("-", "_")),
            "FACEGATE_SERVICE_PUBLIC_KEYS": required("FACEGATE_SERVICE_PUBLIC_KEYS"),
            "FACEGATE_KIOSK_PUBLIC_KEYS": required("FACEGATE_KIOSK_PUBLIC_KEYS"),
            # Short deadlines: a job that is not answered in time is a 503, well within the harness's patience.
            "FACEGATE_REQUEST_TIMEOUT_SECONDS": str(self.deadline_seconds),
        })
        # The profile's client settings for its broker (fetch wait, idempotence, security), as scripts/stack.sh writes them.
        env.update({key: value for key, value in os.environ.items()
                    if key.startswith("FACEGATE_KAFKA_") and key != "FACEGATE_KAFKA_BROKERS"})
        if kind != "matcher-worker":
            env["FACEGATE_AUDIT_KEY"] = self.keys["FACEGATE_AUDIT_KEY"]
        if kind in ("matcher-worker", "ctid-verifier", "kiosk-orchestrator"):
            env["FACEGATE_SEALING_KEY"] = self.keys["FACEGATE_SEALING_KEY"]
        if kind == "auth-gateway":
            env.update({
                "FACEGATE_SIGNING_KEY": self.keys["FACEGATE_SIGNING_KEY"],
                "FACEGATE_CTID_PUBLIC_KEY": required("FACEGATE_CTID_PUBLIC_KEY"),
                "FACEGATE_ADMIN_KEY": self.admin_key,
                "FACEGATE_HTTP_HOST": "127.0.0.1",
                "FACEGATE_HTTP_PORT": str(replica.http_port),
                # All traffic comes from 127.0.0.1 through the balancer and the harness confirms and guesses on purpose:
                # the brute-force rules (tested elsewhere) would otherwise turn the flows into 429s.
                "FACEGATE_THROTTLE_AFTER": "1000",
                "FACEGATE_LOCK_AFTER": "100000",
                "FACEGATE_ADDRESS_THROTTLE_AFTER": "100000",
            })
        if kind == "ctid-verifier":
            env["FACEGATE_CTID_PRIVATE_KEY"] = required("FACEGATE_CTID_PRIVATE_KEY")
        if kind == "kiosk-orchestrator":
            env["FACEGATE_KIOSK_SIGNING_KEY"] = required("FACEGATE_KIOSK_SIGNING_KEY")
        if kind == "matcher-worker":
            # Apps are created with the default model (SFace): one engine of it per replica keeps start-up short.
            env.update({"MATCHER_ENGINES": "1", "MATCHER_MODELS": "sface-2021dec", "MATCHER_RECONCILE_SECONDS": "2"})
        return env

    # --- processes ------------------------------------------------------------------------------------------------

    def start(self, ready_timeout=240):
        os.makedirs(self.logs, exist_ok=True)
        os.makedirs(self.pids, exist_ok=True)
        supervise = os.path.join(ROOT, "scripts", "supervise.sh")
        for replica in self.replicas:
            with open(os.path.join(self.logs, f"{replica.name}.log"), "ab") as log:  # the child keeps its own descriptor
                replica.supervisor = subprocess.Popen([supervise, replica.name, self.pids, os.path.join(self.bin, replica.kind)],
                                                      env=self.environment(replica), stdout=log, stderr=subprocess.STDOUT,
                                                      start_new_session=True)
        balancer = [os.path.join(ROOT, "scripts", "balancer.py"), "--listen", f"127.0.0.1:{self.balancer_port}",
                    "--pid-file", os.path.join(self.pids, "balancer.pid")]
        for replica in self.replicas:
            if replica.kind == "auth-gateway":
                balancer += ["--backend", f"127.0.0.1:{replica.http_port}"]
        with open(os.path.join(self.logs, "balancer.log"), "ab") as log:
            self.balancer = subprocess.Popen(["python3"] + balancer, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        started = time.monotonic()
        pending = list(self.replicas)
        while pending and time.monotonic() - started < ready_timeout:
            pending = [replica for replica in pending if not replica.ready()]
            if self.balancer.poll() is not None:
                raise RuntimeError(f"the balancer exited at start; see {self.logs}/balancer.log")
            time.sleep(0.5)
        if pending:
            raise RuntimeError(f"not ready within {ready_timeout} s: {', '.join(r.name for r in pending)}; logs in {self.logs}")
        return time.monotonic() - started

    def service_pid(self, replica):
        """The pid of the replica's current process (supervise.sh records it at each start), or None."""
        try:
            with open(os.path.join(self.pids, f"{replica.name}.pid")) as handle:
                return int(handle.read().strip())
        except (FileNotFoundError, ValueError):
            return None

    def signal(self, replica, signum):
        pid = self.service_pid(replica)
        if pid is None:
            return None
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return None
        return pid

    def not_ready(self):
        return [replica.name for replica in self.replicas if not replica.ready()]

    def stop(self):
        """Supervisors first (so nothing is started again), then every service once, gracefully, then the balancer —
        all by pid, as scripts/run.sh does."""
        open(os.path.join(self.pids, "stopping"), "w").close()
        for replica in self.replicas:
            if replica.supervisor and replica.supervisor.poll() is None:
                replica.supervisor.terminate()
        services = [pid for pid in (self.service_pid(r) for r in self.replicas) if pid]
        for pid in services:
            for signum in (signal.SIGCONT, signal.SIGTERM):  # a paused replica must run to hear the SIGTERM
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass
        if self.balancer and self.balancer.poll() is None:
            self.balancer.terminate()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(pid) for pid in services):
            time.sleep(0.1)
        for pid in services:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        for process in [r.supervisor for r in self.replicas if r.supervisor] + [self.balancer]:
            if process is None:
                continue
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def drop_database(self):
        if self.database_created:
            self.psql(f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)", url=self.superuser_url)

    def remove_files(self):
        """The copies of the binaries and the photos; the logs stay."""
        for folder in (self.bin, os.path.join(self.workdir, "photos")):
            shutil.rmtree(folder, ignore_errors=True)


def alive(pid):
    """Whether `pid` still runs (a zombie of ours counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
