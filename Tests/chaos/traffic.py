"""The harness's traffic: an HTTP client that records every call with its timing and outcome, a pacer that hands out
requests at a steady rate, and the four flows (face login with new-device confirmation and the identity-token
exchange, enrollment, CTID verification, kiosk session), each checking what the API documents as it goes and noting
every single-use value and every effect the checks afterwards compare with PostgreSQL and the matchers."""

import base64
import http.client
import json
import os
import socket
import threading
import time
import uuid

import ctid
import facegate_dpop

# Every error code on the wire and its status (Shared/Domain/FaceGateContracts/ErrorCode.swift and Shared/Wrappers/HTTPServer's own; the served
# OpenAPI document's ErrorCode enum is checked against these names at start). INTERNAL (500) is deliberately absent: never acceptable.
DOCUMENTED = {
    400: {"INVALID_REQUEST", "INVALID_ENVELOPE"},
    401: {"UNAUTHORIZED", "ACCESS_TOKEN_INVALID", "ACCESS_TOKEN_EXPIRED", "IDENTITY_TOKEN_INVALID", "IDENTITY_TOKEN_EXPIRED",
          "DPOP_PROOF_INVALID"},
    403: {"FORBIDDEN", "MODULE_DISABLED", "MODULE_NOT_FORMAL", "BINDING_TICKET_INVALID", "KIOSK_NOT_REGISTERED"},
    404: {"NOT_FOUND", "CREDENTIAL_NOT_ENROLLED"},
    405: {"METHOD_NOT_ALLOWED"},
    409: {"CONFLICT", "IDENTITY_TOKEN_USED", "CONFIRMATION_INVALID", "FACE_LIMIT_REACHED", "IDEMPOTENCY_IN_PROGRESS"},
    410: {"SESSION_EXPIRED"},
    413: {"PAYLOAD_TOO_LARGE"},
    415: {"UNSUPPORTED_MEDIA_TYPE"},
    422: {"NO_FACE", "NO_MATCH_FACE", "IMAGE_FORMAT_ERROR", "CONFIRM_REQUIRED", "EMPLOYEE_NUMBER_MISMATCH", "SPOOF_DETECTED",
          "AMBIGUOUS_MATCH", "LOW_QUALITY", "DUPLICATE_FACE", "AUTHENTICATION_FAILED", "DOCUMENT_UNREADABLE", "DOCUMENT_EXPIRED",
          "DOCUMENT_INVALID", "DOCUMENT_ALREADY_REGISTERED", "NO_PORTRAIT", "FACE_MISMATCH", "TOO_MANY_ATTEMPTS", "APPROVAL_DENIED"},
    423: {"CREDENTIAL_LOCKED"},
    429: {"RATE_LIMITED"},
    503: {"SERVICE_UNAVAILABLE", "TIMEOUT"},
}
ALL_CODES = set().union(*DOCUMENTED.values()) | {"INTERNAL"}


class Exhausted(Exception):
    """The run's request budget is spent: the flow stops where it is."""


class Pacer:
    """Hands out the run's requests at a steady rate: request i is due at start + i / rate."""

    def __init__(self, rate, total):
        self.interval = 1.0 / rate
        self.total = total
        self.issued = 0
        self.start = None
        self.lock = threading.Lock()
        self.stopped = threading.Event()

    def ticket(self):
        with self.lock:
            if self.stopped.is_set() or self.issued >= self.total:
                raise Exhausted()
            if self.start is None:
                self.start = time.monotonic()
            due = self.start + self.issued * self.interval
            self.issued += 1
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)


class Answer:
    def __init__(self, status=None, headers=None, body=b"", error=None, elapsed=0.0):
        self.status, self.headers, self.body, self.error, self.elapsed = status, headers or {}, body, error, elapsed
        self.json = None
        if body and self.headers.get("content-type", "").startswith("application/json"):
            try:
                self.json = json.loads(body)
            except ValueError:
                self.json = None

    @property
    def code(self):
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"].get("code")
        return None

    @property
    def ambiguous(self):
        """No answer, or an answer that says nothing about whether the call had its effect."""
        return self.error is not None or self.status == 503 or self.code == "IDEMPOTENCY_IN_PROGRESS"

    def get(self, key, default=None):
        return self.json.get(key, default) if isinstance(self.json, dict) else default


def transaction_ids(value, found=None):
    """Every `transactionId` in a JSON answer, at any depth."""
    found = set() if found is None else found
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "transactionId" and isinstance(item, str):
                found.add(item)
            else:
                transaction_ids(item, found)
    elif isinstance(value, list):
        for item in value:
            transaction_ids(item, found)
    return found


class Recorder:
    """Every call and everything the checks need afterwards. Lists are appended under one lock."""

    def __init__(self, deadline, margin):
        self.deadline, self.margin = deadline, margin
        self.lock = threading.Lock()
        self.calls = []  # dicts: flow, step, method, route, status, code, error, at, elapsed, traffic, problem
        self.unexpected = []  # documented answers that contradict the flow: (flow, step, detail)
        self.transactions = set()  # every transactionId the API returned
        self.uses = {"confirmation": {}, "identity-token": {}, "ctid-serial": {}}  # value -> [accepted|refused|unknown]
        self.enrollments = []  # one per logical enrollment (see Traffic.enroll)
        self.creations = []  # idempotent creates: {what, name|key, final, id}
        self.kiosk_sessions = []  # {id, expected, events}
        self.replays = []  # idempotent replays of a 201 enrollment: {templateId, replayed, same}
        # When each kind of flow last got through the services that faults interrupt (monotonic times): a face login
        # answered by a matcher, a CTID verification by a verifier, a kiosk selfie by an orchestrator and a matcher.
        self.served = {"login": [], "ctid": [], "kiosk": []}
        self.t0 = time.monotonic()

    def call(self, entry):
        with self.lock:
            self.calls.append(entry)

    def unexpected_answer(self, flow, step, detail):
        with self.lock:
            self.unexpected.append({"flow": flow, "step": step, "detail": detail, "at": round(time.monotonic() - self.t0, 2)})

    def use(self, kind, value, result):
        with self.lock:
            self.uses[kind].setdefault(value, []).append(result)

    def served_now(self, kind):
        with self.lock:
            self.served[kind].append(time.monotonic())

    def add(self, name, item):
        with self.lock:
            getattr(self, name).append(item)


class Client:
    """HTTP/1.1 to the balancer, one connection per call (the balancer closes after each answer). A call that is
    traffic first takes its turn from the pacer. The socket gives up after deadline + margin: no answer by then is a
    hang."""

    def __init__(self, port, recorder, pacer):
        self.port, self.recorder, self.pacer = port, recorder, pacer

    def call(self, flow, step, method, path, body=None, headers=None, traffic=True, route=None, key=None):
        """`key`: a device key (facegate_dpop.DeviceKey) that signs this call with a fresh DPoP proof."""
        if traffic:
            self.pacer.ticket()
        headers = dict(headers or {})
        if key is not None:
            bearer = headers.get("Authorization", "")
            headers["DPoP"] = key.proof(method, f"http://127.0.0.1:{self.port}{path}",
                                        access_token=bearer[len("Bearer "):] if bearer.startswith("Bearer ") else None, body=body or b"")
        limit = self.recorder.deadline + self.recorder.margin
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=limit)
        answer = None
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            answer = Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        except ConnectionRefusedError:
            answer = Answer(error="refused")
        except socket.timeout:
            answer = Answer(error="hang")
        except (ConnectionError, http.client.HTTPException, OSError) as error:
            answer = Answer(error=f"reset ({type(error).__name__})")
        finally:
            connection.close()
        answer.elapsed = time.monotonic() - started
        problem = None
        if answer.error:
            problem = answer.error
        elif answer.elapsed > limit:
            problem = "late"
        elif answer.status >= 500 and not (answer.status == 503 and answer.code == "SERVICE_UNAVAILABLE"):
            problem = f"server error {answer.status} {answer.code}"
        elif 400 <= answer.status < 500 and answer.code not in DOCUMENTED.get(answer.status, ()):
            problem = f"undocumented {answer.status} {answer.code}"
        # The API's answers, not its description: /openapi.json's examples show made-up transaction ids.
        ids = transaction_ids(answer.json) if path != "/openapi.json" else set()
        with self.recorder.lock:
            self.recorder.transactions |= ids
        self.recorder.call({"flow": flow, "step": step, "method": method, "route": route or path, "status": answer.status,
                            "code": answer.code, "error": answer.error, "at": round(started - self.recorder.t0, 3),
                            "elapsed": round(answer.elapsed, 4), "traffic": traffic, "problem": problem})
        return answer


def basic(app):
    return "Basic " + base64.b64encode(f"{app['appId']}:{app['appSecret']}".encode()).decode()


def image_type(name):
    return "image/png" if name.endswith(".png") else "image/jpeg"


class Photos:
    """The photos of each person the harness uses, read once (JPEG/PNG bytes)."""

    def __init__(self, paths):
        self.paths = paths  # person -> [path]
        self.data = {path: open(path, "rb").read() for people in paths.values() for path in people}

    def pick(self, rng, person):
        path = rng.choice(self.paths[person])
        return os.path.basename(path), self.data[path]


class Traffic:
    """The flows. `setup` holds the apps made before the faults: login apps (both people enrolled, a CTID registry),
    kiosk apps (only one person enrolled, so the other is a new customer), and the admin and auditor keys."""

    RETRIES = 3

    def __init__(self, client, recorder, setup, photos, deadline):
        self.client, self.recorder, self.setup, self.photos, self.deadline = client, recorder, setup, photos, deadline
        self.pool = EnrollmentPool()
        self.app_counter = 0
        self.lock = threading.Lock()

    # --- helpers --------------------------------------------------------------------------------------------------

    def admin(self):
        return {"Authorization": f"Bearer {self.setup['adminKey']}"}

    def retried(self, rng, send, attempts=RETRIES):
        """Calls `send()` until its answer is not ambiguous (503, no answer, an idempotent first try still running), at
        most `attempts` times, a second or so apart as a client would, or until the run's budget ends after a first try.
        Answers every answer in order."""
        answers = []
        for attempt in range(attempts):
            if attempt:
                time.sleep(0.5 + rng.random())
            try:
                answers.append(send())
            except Exhausted:
                if not answers:
                    raise
                break  # the budget ended between tries: the last (ambiguous) answer stands, so the outcome is recorded as unknown
            if not answers[-1].ambiguous:
                break
        return answers

    def expect(self, flow, step, answer, allowed):
        """Notes an answer that is neither ambiguous nor among `allowed` ((status, code) pairs; code None = any). Server
        errors are left to their own check."""
        if answer.ambiguous or answer.status is None:
            return True
        if answer.status >= 500:
            return False  # the server-error check counts it
        for status, code in allowed:
            if answer.status == status and (code is None or answer.code == code):
                return True
        self.recorder.unexpected_answer(flow, step, f"{answer.status} {answer.code or ''} {answer.body[:200]!r}")
        return False

    # --- face login -----------------------------------------------------------------------------------------------

    def login(self, rng):
        app = rng.choice(self.setup["loginApps"])
        person = rng.choice(("obama", "biden"))
        user = app["users"][person]
        token = app["accessToken"]
        if rng.random() < 0.25:
            answer = self.client.call("login", "access-token", "POST", "/v1/access-tokens", headers={"Authorization": basic(app)})
            if self.expect("login", "access-token", answer, [(200, None)]) and answer.status == 200:
                token = answer.get("accessToken", token)
        device = "chaos-" + uuid.uuid4().hex[:12]
        name, photo = self.photos.pick(rng, person)
        headers = {"Authorization": f"Bearer {token}", "X-Device-Id": device, "Content-Type": image_type(name)}
        first = self.retried(rng, lambda: self.client.call("login", "face-login", "POST", "/v1/face-login", photo, headers))[-1]
        if not self.expect("login", "face-login (new device)", first, [(200, None)]) or first.status != 200:
            return
        if first.get("status") != "CONFIRM_REQUIRED":
            self.recorder.unexpected_answer("login", "face-login (new device)", f"status {first.get('status')} instead of CONFIRM_REQUIRED")
            return
        self.recorder.served_now("login")
        confirmation = first.get("confirmationId")
        confirm_headers = {"Authorization": f"Bearer {token}", "X-Device-Id": device, "Content-Type": "application/json"}

        def confirm(number):
            body = json.dumps({"confirmationId": confirmation, "employeeNumber": number}).encode()
            return self.client.call("login", "confirm", "POST", "/v1/face-login/confirm", body, confirm_headers)

        if rng.random() < 0.15:
            wrong = confirm("E-NOBODY")
            self.expect("login", "confirm (wrong number)", wrong, [(422, "EMPLOYEE_NUMBER_MISMATCH")])
        ambiguous = False
        bound = False
        for answer in self.retried(rng, lambda: confirm(user["employeeNumber"])):
            if answer.ambiguous:
                ambiguous = True
                self.recorder.use("confirmation", confirmation, "unknown")
                continue
            if answer.status == 200 and answer.get("status") == "SUCCESS":
                self.recorder.use("confirmation", confirmation, "accepted")
                if answer.get("userId") != user["userId"]:
                    self.recorder.unexpected_answer("login", "confirm", f"identified {answer.get('userId')} instead of {person}")
                bound = True
                self.exchange(rng, "login", app, answer.get("identityToken"), user["userId"], "face")
            elif answer.status == 409 and answer.code == "CONFIRMATION_INVALID" and ambiguous:
                self.recorder.use("confirmation", confirmation, "refused")
                bound = None  # the first try may have bound the device
            else:
                self.recorder.use("confirmation", confirmation, "refused")
                self.expect("login", "confirm", answer, [])
        if bound and rng.random() < 0.2:
            again = confirm(user["employeeNumber"])
            if not again.ambiguous:
                self.recorder.use("confirmation", confirmation, "accepted" if again.status == 200 else "refused")
            self.expect("login", "confirm (used twice)", again, [(409, "CONFIRMATION_INVALID")])
        if bound is False:
            return
        # The device is bound now: the next login is a 1:1 check against the user.
        name, photo = self.photos.pick(rng, person)
        headers["Content-Type"] = image_type(name)
        second = self.retried(rng, lambda: self.client.call("login", "face-login", "POST", "/v1/face-login", photo, headers))[-1]
        if second.status == 200 and second.get("status") == "SUCCESS":
            if second.get("userId") != user["userId"]:
                self.recorder.unexpected_answer("login", "face-login (bound device)", f"identified {second.get('userId')} instead of {person}")
            self.exchange(rng, "login", app, second.get("identityToken"), user["userId"], "face")
        elif not (bound is None and second.status == 200 and second.get("status") == "CONFIRM_REQUIRED"):
            self.expect("login", "face-login (bound device)", second, [])

    def exchange(self, rng, flow, app, token, user_id, method):
        """The app server exchanges an identity token once; some exchange it again, which must be refused."""
        headers = {"Authorization": basic(app), "Content-Type": "application/json"}
        body = json.dumps({"identityToken": token}).encode()
        accepted = False
        ambiguous = False
        for answer in self.retried(rng, lambda: self.client.call(flow, "exchange", "POST", "/v1/identity/exchange", body, headers)):
            if answer.ambiguous:
                ambiguous = True
                self.recorder.use("identity-token", token, "unknown")
            elif answer.status == 200:
                accepted = True
                self.recorder.use("identity-token", token, "accepted")
                if answer.get("userId") != user_id or answer.get("method") != method:
                    self.recorder.unexpected_answer(flow, "exchange", f"{answer.get('userId')}/{answer.get('method')} "
                                                                       f"instead of {user_id}/{method}")
            else:
                self.recorder.use("identity-token", token, "refused")
                if not (ambiguous and answer.status == 409 and answer.code == "IDENTITY_TOKEN_USED"):
                    self.expect(flow, "exchange", answer, [])
        if accepted and rng.random() < 0.3:
            again = self.client.call(flow, "exchange (used twice)", "POST", "/v1/identity/exchange", body, headers)
            if not again.ambiguous:
                self.recorder.use("identity-token", token, "accepted" if again.status == 200 else "refused")
            self.expect(flow, "exchange (used twice)", again, [(409, "IDENTITY_TOKEN_USED")])

    # --- enrollment -----------------------------------------------------------------------------------------------

    def enroll(self, rng):
        slot = self.pool.acquire(rng, timeout=self.deadline)
        if slot == "create":
            try:
                self.create_enrollment_app(rng)
            finally:
                self.pool.created()
        elif slot is not None:
            app, person = slot
            try:
                self.enroll_into(rng, app, person)
            finally:
                self.pool.release(app, person)

    def create_enrollment_app(self, rng):
        with self.lock:
            self.app_counter += 1
            name = f"chaos enroll {self.app_counter}"
        body = json.dumps({"name": name, "modules": {"faceLogin": "formal", "ctid": "disabled", "kiosk": "disabled", "deviceAuth": "disabled"},
                           "deviceBinding": "header", "deviceBindingPolicy": "employeeNumber"}).encode()
        headers = dict(self.admin(), **{"Content-Type": "application/json", "Idempotency-Key": "chaos-app-" + uuid.uuid4().hex})
        answers = self.retried(rng, lambda: self.client.call("enroll", "create app", "POST", "/v1/apps", body, headers))
        final = answers[-1]
        created = {"what": "app", "name": name, "final": final.status, "id": final.get("appId") if final.status == 201 else None,
                   "ambiguous": any(a.ambiguous for a in answers)}
        self.recorder.add("creations", created)
        if final.status != 201:
            self.expect("enroll", "create app", final, [])
            return
        app = {"appId": final.get("appId"), "appSecret": final.get("appSecret"), "name": name, "users": {}}
        for person, (number, full_name) in PEOPLE.items():
            user_id = self.create_user(rng, app, number, full_name)
            if user_id is None:
                return
            app["users"][person] = {"userId": user_id, "employeeNumber": number}
        self.pool.add(app)

    def create_user(self, rng, app, number, full_name):
        route = "/v1/apps/{appId}/users"
        path = f"/v1/apps/{app['appId']}/users"
        body = json.dumps({"employeeNumber": number, "name": full_name}).encode()
        headers = dict(self.admin(), **{"Content-Type": "application/json", "Idempotency-Key": "chaos-user-" + uuid.uuid4().hex})
        answers = self.retried(rng, lambda: self.client.call("enroll", "create user", "POST", path, body, headers, route=route))
        final = answers[-1]
        ambiguous = any(a.ambiguous for a in answers[:-1])
        self.recorder.add("creations", {"what": "user", "name": f"{app['appId']}/{number}", "final": final.status,
                                        "id": final.get("userId") if final.status == 201 else None, "ambiguous": ambiguous})
        if final.status == 201:
            return final.get("userId")
        if final.status == 409 and final.code == "CONFLICT" and ambiguous:
            # An earlier try made the user; its answer was lost. Find it as an operator would.
            listed = self.client.call("enroll", "list users", "GET", path + "?limit=100", headers=self.admin(), route=route)
            for item in listed.get("items", []) if listed.status == 200 else []:
                if item.get("employeeNumber") == number:
                    return item.get("userId")
            return None
        self.expect("enroll", "create user", final, [])
        return None

    def enroll_into(self, rng, app, person):
        """One logical enrollment, retried with the same Idempotency-Key while its outcome is unknown, as the API asks
        of a client. `self.pool` holds the user's slot, so no two run at once for one user."""
        user = app["users"][person]
        other = "biden" if person == "obama" else "obama"
        cross = self.pool.enrolled_for(app, other, older_than=10) and rng.random() < 0.1
        name, photo = self.photos.pick(rng, other if cross else person)
        route = "/v1/apps/{appId}/users/{userId}/faces"
        path = f"/v1/apps/{app['appId']}/users/{user['userId']}/faces"
        headers = dict(self.admin(), **{"Content-Type": image_type(name), "Idempotency-Key": "chaos-face-" + uuid.uuid4().hex})
        answers = self.retried(rng, lambda: self.client.call("enroll", "enroll", "POST", path, photo, headers, route=route))
        final = answers[-1]
        entry = {"appId": app["appId"], "userId": user["userId"], "person": person, "photo": name, "cross": cross,
                 "attempts": [(a.status, a.code or a.error) for a in answers], "final": final.status, "code": final.code,
                 "templateId": final.get("templateId") if final.status == 201 else None,
                 "unresolved": final.ambiguous, "at": round(time.monotonic() - self.recorder.t0, 2)}
        self.recorder.add("enrollments", entry)
        confirmed, unresolved = self.pool.counts(app, person)
        if final.status == 201:
            if cross:
                self.recorder.unexpected_answer("enroll", "enroll (another user's face)",
                                                f"201 for {other}'s face on {person}'s user although {other} is enrolled in the app")
            self.pool.note(app, person, confirmed=1)
            if rng.random() < 0.1:
                again = self.client.call("enroll", "enroll (replayed)", "POST", path, photo, headers, route=route)
                # A 5xx says nothing about the replay (the server-error check counts it); anything else must be the first answer.
                if not again.ambiguous and again.status < 500:
                    self.recorder.add("replays", {"templateId": entry["templateId"], "status": again.status,
                                                  "replayed": again.headers.get("idempotent-replayed") == "true",
                                                  "same": again.get("templateId") == entry["templateId"]})
        elif final.ambiguous:
            self.pool.note(app, person, unresolved=1)
        elif final.status == 409 and final.code == "FACE_LIMIT_REACHED":
            if confirmed < MAX_FACES and unresolved == 0:
                self.recorder.unexpected_answer("enroll", "enroll", f"FACE_LIMIT_REACHED with {confirmed} templates confirmed")
            self.pool.note(app, person, full=True)
        elif final.status == 422 and final.code == "DUPLICATE_FACE":
            if not cross:
                self.recorder.unexpected_answer("enroll", "enroll", f"DUPLICATE_FACE for {person}'s own face ({name})")
        else:
            self.expect("enroll", "enroll", final, [(422, "NO_FACE"), (422, "LOW_QUALITY")])

    # --- CTID -----------------------------------------------------------------------------------------------------

    def ctid(self, rng):
        app = rng.choice(self.setup["loginApps"])
        identity = rng.choice(app["registry"])
        mode = "0x42" if identity.get("portrait") and rng.random() < 0.5 else "0x40"
        headers = {"Authorization": f"Bearer {app['accessToken']}", "Content-Type": "application/json", "X-Device-Id": "chaos-ctid"}
        serial = self.retried(rng, lambda: self.client.call("ctid", "serial", "POST", "/v1/ctid/serial-numbers",
                                                            json.dumps({"authMode": mode}).encode(), headers))[-1]
        if not self.expect("ctid", "serial", serial, [(200, None)]) or serial.status != 200:
            return
        fields = {"bizSerialNum": serial.get("bizSerialNum"), "randNum": serial.get("randNum"), "authMode": mode,
                  "name": identity["name"], "number": identity["number"]}
        if mode == "0x42":
            fields["photoData"] = base64.b64encode(self.photos.pick(rng, "obama")[1]).decode()

        def verify(step):
            body = ctid.request_body(app["appId"], app["ctidKey"], fields)
            answer = self.client.call("ctid", step, "POST", "/v1/ctid/verifications", body, headers)
            if answer.ambiguous:
                self.recorder.use("ctid-serial", fields["bizSerialNum"], "unknown")
                return answer, None
            if answer.status != 200:
                self.recorder.use("ctid-serial", fields["bizSerialNum"], "refused")
                self.expect("ctid", step, answer, [])
                return answer, None
            try:
                result = json.loads(ctid.open_envelope(answer.json, app["appId"], app["ctidKey"]))
            except (ValueError, KeyError, TypeError) as error:
                self.recorder.unexpected_answer("ctid", step, f"the answer envelope does not open: {error}")
                return answer, None
            with self.recorder.lock:
                self.recorder.transactions |= transaction_ids(result)
            code = result.get("resultCode")
            # resultCode 2: the serial was unknown, used or expired, so this submission used nothing.
            self.recorder.use("ctid-serial", fields["bizSerialNum"], "refused" if code == "2" else "accepted")
            if result.get("bizSerialNum") != fields["bizSerialNum"]:
                self.recorder.unexpected_answer("ctid", step, "the answer names another serial")
            return answer, result

        ambiguous = False
        accepted = False
        for attempt in range(self.RETRIES):
            if attempt:
                time.sleep(0.5 + rng.random())
            answer, result = verify("verify")
            if answer.ambiguous:
                ambiguous = True
                continue
            if result is None:
                break
            code = result.get("resultCode")
            accepted = code != "2"
            if code == "0" and result.get("authResult") == "":
                self.recorder.served_now("ctid")
            elif code == "9" and mode == "0x42":
                pass  # face matching unavailable: documented, and the serial is spent
            elif code == "2" and ambiguous:
                pass  # an earlier try spent it
            else:
                self.recorder.unexpected_answer("ctid", "verify", f"resultCode {code} authResult {result.get('authResult')!r} "
                                                                  f"({result.get('message')})")
            break
        if accepted and rng.random() < 0.25:
            if rng.random() < 0.3:
                # Two at once: of concurrent submissions of one serial exactly one may use it (it already is used).
                def twice():
                    try:
                        verify("verify (used twice, concurrently)")
                    except Exhausted:
                        pass

                threads = [threading.Thread(target=twice) for _ in range(2)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            else:
                _, result = verify("verify (used twice)")
                if result is not None and result.get("resultCode") != "2":
                    self.recorder.unexpected_answer("ctid", "verify (used twice)", f"resultCode {result.get('resultCode')}")

    # --- kiosk ----------------------------------------------------------------------------------------------------

    def kiosk(self, rng):
        app = rng.choice(self.setup["kioskApps"])
        known = rng.random() < 0.8
        kiosk = app["kioskKey"]  # the app's registered kiosk: every call is signed with its key
        headers = {"Authorization": f"Bearer {app['accessToken']}"}
        created = self.retried(rng, lambda: self.client.call("kiosk", "create session", "POST", "/v1/kiosk/sessions", b"", headers, key=kiosk))[-1]
        if not self.expect("kiosk", "create session", created, [(201, None)]) or created.status != 201:
            return
        session, interview = created.get("interviewId"), created.get("interviewToken")
        route = "/v1/kiosk/sessions/{interviewId}"
        path = f"/v1/kiosk/sessions/{session}"
        step_headers = dict(headers, **{"X-Interview-Token": interview})
        name, photo = self.photos.pick(rng, "obama" if known else "biden")
        selfie_headers = dict(step_headers, **{"Content-Type": image_type(name)})
        answers = self.retried(rng, lambda: self.client.call("kiosk", "selfie", "POST", path + "/selfie", photo, selfie_headers,
                                                             route=route + "/selfie", key=kiosk))
        selfie = answers[-1]
        if selfie.status == 409 and selfie.code == "CONFLICT" and any(a.ambiguous for a in answers):
            # An earlier try moved the session on and its answer was lost: read where it stands.
            selfie = self.client.call("kiosk", "session", "GET", path, None, {"X-Interview-Token": interview}, route=route, key=kiosk)
        if selfie.ambiguous or not self.expect("kiosk", "selfie", selfie, [(200, None)]):
            return
        state = selfie.get("state")
        expected = None
        if state in ("completed", "idFront"):
            self.recorder.served_now("kiosk")
        if known:
            result = selfie.get("result") or {}
            if state != "completed" or not result.get("success") or result.get("customerUUID") != app["users"]["obama"]["userId"]:
                self.recorder.unexpected_answer("kiosk", "selfie (known face)", f"state {state}, result {result}")
                return
            expected = ["selfieScanCompleted", "kioskFlowCompleted"]
            self.exchange(rng, "kiosk", app, result.get("token"), app["users"]["obama"]["userId"], "kiosk")
        else:
            if state != "idFront":
                self.recorder.unexpected_answer("kiosk", "selfie (new face)", f"state {state}")
                return
            cancelled = self.retried(rng, lambda: self.client.call("kiosk", "cancel", "DELETE", path, None, step_headers, route=route, key=kiosk))[-1]
            if cancelled.ambiguous or not self.expect("kiosk", "cancel", cancelled, [(204, None)]):
                return
            expected = ["selfieScanCompleted", "userCancelledSession"]
        view = self.client.call("kiosk", "session", "GET", path, None, {"X-Interview-Token": interview}, route=route, key=kiosk)
        if self.expect("kiosk", "session", view, [(200, None)]) and view.status == 200:
            final = "completed" if known else "cancelled"
            if view.get("state") != final:
                self.recorder.unexpected_answer("kiosk", "session", f"state {view.get('state')} instead of {final}")
        events = self.client.call("kiosk", "events", "GET", path + "/events", None, {"X-Interview-Token": interview},
                                  route=route + "/events", key=kiosk)
        if events.status == 200:
            names = [line[len("event: "):] for line in events.body.decode(errors="replace").split("\n") if line.startswith("event: ")]
            self.recorder.add("kiosk_sessions", {"id": session, "expected": expected, "events": names})
        else:
            self.expect("kiosk", "events", events, [])


MAX_FACES = 5  # FACEGATE_MAX_FACES_PER_USER's default
PEOPLE = {"obama": ("E-OBAMA", "Barack Obama"), "biden": ("E-BIDEN", "Joe Biden")}


class EnrollmentPool:
    """The enrollment apps made during the run and what each user holds as far as the answers tell: templates confirmed
    by a 201, enrollments whose outcome is unknown. A user is lent to one enrollment at a time; a new app is made (by
    one client at a time) when fewer than `OPEN_SLOTS` users can still take a face."""

    OPEN_SLOTS = 6

    def __init__(self):
        self.changed = threading.Condition()
        self.apps = []
        self.state = {}  # (appId, person) -> {"busy", "confirmed", "unresolved", "full", "first"}
        self.creating = False

    def add(self, app):
        with self.changed:
            self.apps.append(app)
            for person in PEOPLE:
                self.state[(app["appId"], person)] = {"busy": False, "confirmed": 0, "unresolved": 0, "full": False, "first": None}

    def acquire(self, rng, timeout):
        """A free (app, person), "create" when the caller should make a new app, or None when none came free in time."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                open_slots = [(app, person) for app in self.apps for person in PEOPLE if not self.full(app, person)]
                if len(open_slots) < self.OPEN_SLOTS and not self.creating:
                    self.creating = True
                    return "create"
                free = [slot for slot in open_slots if not self.state[(slot[0]["appId"], slot[1])]["busy"]]
                if free:
                    app, person = rng.choice(free)
                    self.state[(app["appId"], person)]["busy"] = True
                    return app, person
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.changed.wait(remaining)

    def created(self):
        with self.changed:
            self.creating = False
            self.changed.notify_all()

    def full(self, app, person):
        state = self.state[(app["appId"], person)]
        return state["full"] or state["confirmed"] + state["unresolved"] >= MAX_FACES

    def release(self, app, person):
        with self.changed:
            self.state[(app["appId"], person)]["busy"] = False
            self.changed.notify_all()

    def note(self, app, person, confirmed=0, unresolved=0, full=False):
        with self.changed:
            state = self.state[(app["appId"], person)]
            state["confirmed"] += confirmed
            state["unresolved"] += unresolved
            state["full"] = state["full"] or full
            if confirmed and state["first"] is None:
                state["first"] = time.monotonic()

    def counts(self, app, person):
        with self.changed:
            state = self.state[(app["appId"], person)]
            return state["confirmed"], state["unresolved"]

    def enrolled_for(self, app, person, older_than):
        """Whether `person` has a confirmed template in `app` since at least `older_than` seconds (every matcher has
        had time to hear of it)."""
        with self.changed:
            first = self.state[(app["appId"], person)]["first"]
            return first is not None and time.monotonic() - first > older_than
