"""A private FaceGate for the browser tests (and Tests/openapi): the built auth-gateway, matcher-worker and kiosk-orchestrator
(FACEGATE_BIN_DIR; a caller may ask for fewer services) on a fresh database and topic prefix of the test PostgreSQL and broker
(FACEGATE_TEST_DATABASE_URL, FACEGATE_TEST_KAFKA_BROKERS), on free loopback ports. Processes are stopped by the pid recorded at start."""

import base64
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def required(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run the browser tests through `make test` (scripts/test.sh)")
    return value


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body or b"null")


def request(method, url, body=None, headers=None, timeout=30):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=timeout) as answer:
            return Response(answer.status, answer.headers, answer.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, error.headers, error.read())


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# Each service's own database login (FaceGateCore's Schema.serviceLogins).
SERVICE_LOGINS = {"auth-gateway": "facegate_gateway", "matcher-worker": "facegate_matcher",
                  "kiosk-orchestrator": "facegate_kiosk", "ctid-verifier": "facegate_ctid"}


def service_key(service):
    """The service's own message-signing key, from the test profile's environment (scripts/stack.sh)."""
    return required("FACEGATE_SERVICE_KEY_" + service.upper().replace("-", "_"))


# Started in this order; the gateway last, once the workers it talks to are on their way.
SERVICES = ("matcher-worker", "kiosk-orchestrator", "auth-gateway")


class Stack:
    def __init__(self, artifacts, services=SERVICES, label="console"):
        """`label` names the database, the admin key and the state folder (.run/test/<label>) of this stack."""
        self.artifacts = artifacts
        self.services = tuple(services)
        self.bin_dir = required("FACEGATE_BIN_DIR")
        self.images = required("FACEGATE_TEST_IMAGES")
        self.base_db_url = required("FACEGATE_TEST_DATABASE_URL")
        self.brokers = required("FACEGATE_TEST_KAFKA_BROKERS")
        self.models = required("FACEGATE_MODEL_DIR")
        self.admin_key = f"fgk_{label}_" + secrets.token_urlsafe(18)
        self.db_name = f"fg_{label}_" + secrets.token_hex(6)
        # The schema owner's URL (migrations, the tests' own reads and tampering); services get their own roles.
        self.db_url = self.database_url("facegate_owner")
        self.http_port = free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.processes = {}
        self.state = os.path.join(ROOT, ".run", "test", label)
        os.makedirs(self.state, exist_ok=True)

    def environment(self):
        env = dict(os.environ)
        ctid_public = os.environ.get("FACEGATE_CTID_PUBLIC_KEY") or base64.b64encode(secrets.token_bytes(32)).decode()
        env.update({
            "FACEGATE_DATABASE_URL": self.db_url,
            "FACEGATE_KAFKA_BROKERS": self.brokers,
            "FACEGATE_TOPIC_PREFIX": "c" + secrets.token_hex(4) + ".",
            "FACEGATE_MODEL_DIR": self.models,
            "FACEGATE_ADMIN_KEY": self.admin_key,
            "FACEGATE_SIGNING_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "FACEGATE_SEALING_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "FACEGATE_CTID_PUBLIC_KEY": ctid_public,
            "FACEGATE_HTTP_HOST": "127.0.0.1",
            "FACEGATE_HTTP_PORT": str(self.http_port),
            "FACEGATE_LOG_LEVEL": "warning",
            # A device locks after three failed logins, so the device-reset test has a lock to clear.
            "FACEGATE_LOCK_AFTER": "3",
            "FACEGATE_THROTTLE_AFTER": "100",
            # Every browser test speaks from 127.0.0.1: the per-address flood rule would otherwise join in.
            "FACEGATE_ADDRESS_THROTTLE_AFTER": "100000",
            "MATCHER_ENGINES": "1",
            "MATCHER_RECONCILE_SECONDS": "2",
        })
        env.pop("FACEGATE_CONSOLE_DIR", None)  # the default: this source tree's Console folder
        return env

    def database_url(self, role):
        parts = urllib.parse.urlsplit(self.base_db_url)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urllib.parse.urlunsplit((parts.scheme, f"{role}@{host}", "/" + self.db_name, parts.query, ""))

    def psql(self, sql, database=None):
        url = database or self.base_db_url
        # Row-level security is FORCEd: the owner names the every-app scope to see every app's rows.
        return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-tAc", sql], check=True, capture_output=True, text=True,
                              env={**os.environ, "PGOPTIONS": "-c facegate.app_id=*"}).stdout.strip()

    def start(self):
        self.psql(f"CREATE DATABASE {self.db_name} OWNER facegate_owner")
        env = self.environment()
        subprocess.run([os.path.join(self.bin_dir, "facegate"), "migrate"], env=env, check=True, capture_output=True)
        admin_ports = {}
        for name in self.services:
            admin_ports[name] = free_port()
            service_env = dict(env, FACEGATE_ADMIN_PORT=str(admin_ports[name]), FACEGATE_DATABASE_URL=self.database_url(SERVICE_LOGINS[name]),
                               FACEGATE_SERVICE_KEY=service_key(name))
            for other in [key for key in service_env if key.startswith("FACEGATE_SERVICE_KEY_")]:
                del service_env[other]
            service_env["FACEGATE_KIOSK_SIGNING_KEY"] = required("FACEGATE_KIOSK_SIGNING_KEY")
            service_env["FACEGATE_KIOSK_PUBLIC_KEYS"] = required("FACEGATE_KIOSK_PUBLIC_KEYS")
            with open(os.path.join(self.state, f"{name}.log"), "wb") as log:  # the child keeps its own copy of the descriptor
                process = subprocess.Popen([os.path.join(self.bin_dir, name)], env=service_env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True)
            self.processes[name] = process
            with open(os.path.join(self.state, f"{name}.pid"), "w") as pid_file:
                pid_file.write(str(process.pid))
        self.admin_ports = admin_ports
        deadline = time.monotonic() + 120
        pending = dict(admin_ports)
        while pending and time.monotonic() < deadline:
            for name, port in list(pending.items()):
                if self.processes[name].poll() is not None:
                    raise RuntimeError(f"{name} exited at start; see {self.state}/{name}.log")
                try:
                    if request("GET", f"http://127.0.0.1:{port}/readyz", timeout=2).status == 200:
                        del pending[name]
                except OSError:
                    pass
            time.sleep(0.5)
        if pending:
            raise RuntimeError(f"not ready within 120 s: {', '.join(pending)}; logs in {self.state}")

    def undeclared_refusals(self):
        """The gateway's refusals whose code their route does not declare in the OpenAPI document
        (`facegate_http_undeclared_refusals_total` lines): each one is a gap in the document."""
        text = request("GET", f"http://127.0.0.1:{self.admin_ports['auth-gateway']}/metrics").body.decode()
        return [line for line in text.splitlines() if line.startswith("facegate_http_undeclared_refusals_total{")]

    def stop(self):
        for name, process in self.processes.items():
            if process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
        for name, process in self.processes.items():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
            try:
                os.remove(os.path.join(self.state, f"{name}.pid"))
            except FileNotFoundError:
                pass
        try:
            self.psql(f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)")
        except subprocess.CalledProcessError:
            pass

    # --- API calls used to seed and to check what the console did ----------------------------------------------

    def call(self, method, path, json_body=None, bearer=None, basic=None, body=None, content_type=None, headers=None):
        all_headers = dict(headers or {})
        if bearer:
            all_headers["Authorization"] = f"Bearer {bearer}"
        if basic:
            all_headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode()
        if json_body is not None:
            body = json.dumps(json_body).encode()
            content_type = "application/json"
        if content_type:
            all_headers["Content-Type"] = content_type
        return request(method, self.url + path, body=body, headers=all_headers)

    def admin(self, method, path, json_body=None, **kwargs):
        return self.call(method, path, json_body=json_body, bearer=self.admin_key, **kwargs)

    def image(self, name):
        with open(os.path.join(self.images, name), "rb") as handle:
            return handle.read()

    def face_login(self, token, device, image_name):
        content_type = "image/png" if image_name.endswith(".png") else "image/jpeg"
        return self.call("POST", "/v1/face-login", bearer=token, body=self.image(image_name), content_type=content_type,
                         headers={"X-Device-Id": device})


def write_y4m(photos, path, width=640, height=480, frames=15):
    """A short Y4M video (I420, 15 fps) for Chromium's fake camera: each photo (a path or a list of paths, e.g. the
    frames of an acted-out challenge) held for `frames` frames. Chromium loops the file."""
    photos = [photos] if isinstance(photos, str) else list(photos)
    with open(path, "wb") as handle:
        handle.write(f"YUV4MPEG2 W{width} H{height} F15:1 Ip A1:1 C420jpeg\n".encode())
        for photo in photos:
            frame = i420_frame(photo, width, height)
            for _ in range(frames):
                handle.write(b"FRAME\n")
                handle.write(frame)
    return path


def i420_frame(photo, width, height):
    """One photo as planar YUV 4:2:0 (BT.601 full range, as JPEG uses), letterboxed so the whole face stays in view."""
    rgb = subprocess.run(["convert", photo, "-resize", f"{width}x{height}", "-background", "#777777", "-gravity", "center", "-extent", f"{width}x{height}",
                          "-depth", "8", "rgb:-"], check=True, capture_output=True).stdout
    y_plane = bytearray(width * height)
    u_plane = bytearray((width // 2) * (height // 2))
    v_plane = bytearray((width // 2) * (height // 2))
    for row in range(height):
        base = row * width
        for column in range(width):
            offset = (base + column) * 3
            r, g, b = rgb[offset], rgb[offset + 1], rgb[offset + 2]
            y_plane[base + column] = max(0, min(255, int(0.299 * r + 0.587 * g + 0.114 * b)))
    for row in range(0, height, 2):
        for column in range(0, width, 2):
            offset = (row * width + column) * 3
            r, g, b = rgb[offset], rgb[offset + 1], rgb[offset + 2]
            index = (row // 2) * (width // 2) + column // 2
            u_plane[index] = max(0, min(255, int(128 - 0.168736 * r - 0.331264 * g + 0.5 * b)))
            v_plane[index] = max(0, min(255, int(128 + 0.5 * r - 0.418688 * g - 0.081312 * b)))
    return bytes(y_plane) + bytes(u_plane) + bytes(v_plane)


def burst(photo, actions, out, seed=None):
    """The frames of `facegate-bench frames`: `photo` warped along its own landmarks to perform `actions` in order.
    Answers the frame paths in order (frame0.jpg, frame1.jpg, …)."""
    bench = os.path.join(required("FACEGATE_BIN_DIR"), "facegate-bench")
    if not os.path.exists(bench):
        raise RuntimeError(f"{bench} is missing: `swift build --build-tests` builds it (scripts/test.sh does)")
    command = [bench, "frames", "--photo", photo, "--actions", ",".join(actions), "--out", out]
    # A fresh seed by default: the gateway refuses a frame it has seen before as a replay.
    command += ["--seed", str(seed if seed is not None else random.randint(1, 2**31))]
    made = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if made.returncode != 0:
        raise RuntimeError(f"facegate-bench frames failed: {made.stderr.strip()}")
    names = [name for name in os.listdir(out) if name.startswith("frame") and name.endswith(".jpg")]
    return [os.path.join(out, name) for name in sorted(names, key=lambda name: int(name[5:-4]))]


def challenge_video(photo, path):
    """Frames acting out every liveness action from `facegate-bench frames` when that tool is built, else the still photo."""
    bench = os.path.join(os.environ.get("FACEGATE_BIN_DIR", ""), "facegate-bench")
    out = path + ".frames"
    if os.path.exists(bench):
        made = subprocess.run([bench, "frames", "--photo", photo, "--actions", "BLINK,TURN_LEFT,TURN_RIGHT", "--out", out],
                              capture_output=True, timeout=120)
        images = sorted(os.path.join(out, name) for name in os.listdir(out)) if made.returncode == 0 and os.path.isdir(out) else []
        images = [image for image in images if image.lower().endswith((".jpg", ".jpeg", ".png"))]
        if images:
            return write_y4m(images, path, frames=4)
    return write_y4m(photo, path)


def new_user_data_dir():
    return tempfile.mkdtemp(prefix="facegate-chromium-")
