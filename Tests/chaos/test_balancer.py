"""scripts/balancer.py against stand-in backends in this process: turns, a refusing backend skipped and logged, a backend
that dies before answering and no backend at all answered 503 in the API's envelope, bodies forwarded intact (also
chunked and after `Expect: 100-continue`), an event stream delivered as it is written, the pid file, SIGTERM."""

import http.client
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BALANCER = os.path.join(ROOT, "scripts", "balancer.py")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Backend(http.server.BaseHTTPRequestHandler):
    """Answers with its port and what it received; /events writes three events 0.4 s apart; /vanish closes the
    connection without a byte. It keeps its connections open (`Connection: keep-alive`) whatever it is asked, so the
    balancer must follow the answer's framing instead of waiting for the backend to close."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for number in range(3):
                self.wfile.write(f"id: {number}\nevent: tick\ndata: {{}}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.4)
            self.close_connection = True
            return
        self.answer(b"")

    def do_POST(self):
        if self.path == "/vanish":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.answer(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def answer(self, body):
        payload = json.dumps({"port": self.server.server_port, "length": len(body), "sha": hash(body),
                              "connection": self.headers.get("Connection"), "expect": self.headers.get("Expect"),
                              "forwardedFor": self.headers.get("X-Forwarded-For")}).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "keep-alive")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


class BackendServer:
    def __init__(self, port=0):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Backend)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class BalancerTests(unittest.TestCase):
    def start_balancer(self, ports):
        self.port = free_port()
        self.folder = tempfile.mkdtemp(prefix="facegate-balancer-")
        self.pid_file = os.path.join(self.folder, "balancer.pid")
        self.log = open(os.path.join(self.folder, "balancer.log"), "w+")
        command = [sys.executable, BALANCER, "--listen", f"127.0.0.1:{self.port}", "--pid-file", self.pid_file, "--down-seconds", "0.5"]
        for port in ports:
            command += ["--backend", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop_balancer)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.fail("the balancer did not listen")

    def stop_balancer(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        self.log.close()

    def logged(self):
        self.log.flush()
        with open(self.log.name) as handle:
            return handle.read()

    def request(self, method, path, body=None, headers=None, chunked=False):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def backends(self, count):
        servers = [BackendServer() for _ in range(count)]
        for server in servers:
            self.addCleanup(server.stop)
        return servers

    def test_requests_take_turns_and_close_both_connections(self):
        first, second = self.backends(2)
        self.start_balancer([first.port, second.port])
        seen = []
        for _ in range(4):
            status, headers, body = self.request("GET", "/anything")
            self.assertEqual(status, 200)
            self.assertEqual(headers.get("connection"), "close")
            answer = json.loads(body)
            self.assertEqual(answer["connection"], "close")
            self.assertEqual(answer["forwardedFor"], "127.0.0.1")
            seen.append(answer["port"])
        self.assertEqual(sorted(seen), sorted([first.port, second.port] * 2))

    def test_a_refusing_backend_is_skipped_and_logged_down_then_up(self):
        (alive,) = self.backends(1)
        missing = free_port()
        self.start_balancer([missing, alive.port])
        for _ in range(4):
            status, _, body = self.request("GET", "/")
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(body)["port"], alive.port)
        self.assertEqual(self.logged().count(f"backend 127.0.0.1:{missing} down (connection refused)"), 1)
        revived = BackendServer(missing)
        self.addCleanup(revived.stop)
        time.sleep(0.6)  # past --down-seconds
        ports = {json.loads(self.request("GET", "/")[2])["port"] for _ in range(4)}
        self.assertEqual(ports, {missing, alive.port})
        self.assertIn(f"backend 127.0.0.1:{missing} up", self.logged())

    def test_a_backend_that_dies_before_answering_gives_503_in_the_envelope(self):
        (server,) = self.backends(1)
        self.start_balancer([server.port])
        status, headers, body = self.request("POST", "/vanish", b"photo", {"Content-Type": "image/jpeg"})
        self.assertEqual(status, 503)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body)["error"]["code"], "SERVICE_UNAVAILABLE")
        self.assertTrue(json.loads(body)["error"]["message"])

    def test_no_backend_at_all_gives_503(self):
        self.start_balancer([free_port(), free_port()])
        status, headers, body = self.request("GET", "/v1/anything")
        self.assertEqual(status, 503)
        self.assertEqual(headers.get("retry-after"), "1")
        self.assertEqual(json.loads(body), {"error": {"code": "SERVICE_UNAVAILABLE",
                                                      "message": "no gateway is reachable right now; try again"}})

    def test_bodies_arrive_intact_with_content_length_chunked_and_expect_continue(self):
        (server,) = self.backends(1)
        self.start_balancer([server.port])
        photo = os.urandom(3 * 1024 * 1024)
        status, _, body = self.request("POST", "/faces", photo, {"Content-Type": "image/jpeg"})
        self.assertEqual(status, 201)
        self.assertEqual(json.loads(body)["length"], len(photo))
        self.assertEqual(json.loads(body)["sha"], hash(photo))
        chunks = iter([photo[:1000], photo[1000:]])
        status, _, body = self.request("POST", "/faces", chunks, {"Content-Type": "image/jpeg", "Transfer-Encoding": "chunked"}, chunked=True)
        self.assertEqual((status, json.loads(body)["length"], json.loads(body)["sha"]), (201, len(photo), hash(photo)))
        # A client that asks before sending its body (curl does for large bodies) hears 100 Continue first.
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"POST /faces HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            self.assertEqual(sock.recv(64), b"HTTP/1.1 100 Continue\r\n\r\n")
            sock.sendall(b"hello")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, payload = answer.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.0 201") or head.startswith(b"HTTP/1.1 201"), head)
        self.assertEqual(json.loads(payload)["length"], 5)
        self.assertIsNone(json.loads(payload)["expect"])

    def test_an_event_stream_arrives_event_by_event(self):
        (server,) = self.backends(1)
        self.start_balancer([server.port])
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self.addCleanup(connection.close)
        started = time.monotonic()
        connection.request("GET", "/events")
        response = connection.getresponse()
        self.assertEqual(response.getheader("Content-Type"), "text/event-stream")
        first = response.fp.readline()
        self.assertEqual(first, b"id: 0\n")
        self.assertLess(time.monotonic() - started, 0.35, "the first event waited for the end of the stream")
        rest = response.read()
        self.assertEqual(rest.count(b"event: tick"), 3)

    def test_the_pid_file_names_the_process_until_sigterm(self):
        (server,) = self.backends(1)
        self.start_balancer([server.port])
        with open(self.pid_file) as handle:
            self.assertEqual(int(handle.read()), self.process.pid)
        os.kill(self.process.pid, signal.SIGTERM)
        self.assertEqual(self.process.wait(timeout=10), 0)
        self.assertFalse(os.path.exists(self.pid_file))
        self.assertIn("stopped", self.logged())


if __name__ == "__main__":
    unittest.main()
