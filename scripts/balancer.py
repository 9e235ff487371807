#!/usr/bin/env python3
"""A local HTTP/1.1 load balancer in front of several auth-gateway instances (Python standard library only).

    scripts/balancer.py --listen 127.0.0.1:8080 --backend 127.0.0.1:8081 --backend 127.0.0.1:8082 [--pid-file FILE]

Each client connection carries one request: its head and body (Content-Length, or chunked, which is forwarded with a
Content-Length) are read whole, then sent to the next backend in turn with `Connection: close`, and the backend's
answer is streamed back as it arrives (Server-Sent Events included), framed as the backend framed it; the client
connection closes after it.

- A backend that refuses the connection (or does not accept it within --connect-timeout) is marked down for
  --down-seconds and the next one is tried; while every backend is marked down each is still tried once, since
  one may be back early.
- A backend that dies after the request was sent and before its whole response head arrived: the client gets
  503 with the API's error envelope. No backend at all: the same 503. A request is never sent twice: it may have
  had its effect.
- One log line per backend state change (up → down, down → up), on stdout.

`make run` (FACEGATE_GATEWAYS>1) and the fault-injection harness (Tests/chaos) start it; they stop it by the pid it
writes to --pid-file (SIGTERM).
"""

import argparse
import asyncio
import itertools
import json
import os
import signal
import sys
import time

MAX_HEAD_BYTES = 64 * 1024
# Headers that describe one connection, not the request: the balancer speaks its own on each side.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "expect"}
REASONS = {400: "Bad Request", 413: "Payload Too Large", 503: "Service Unavailable"}


def log(message):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    print(f"{stamp} balancer: {message}", flush=True)


def error_response(status, code, message):
    """An answer in the API's error envelope (API.md), closing the connection."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = [f"HTTP/1.1 {status} {REASONS[status]}", "Content-Type: application/json", f"Content-Length: {len(body)}",
            "Connection: close"]
    if status == 503:
        head.append("Retry-After: 1")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class ClientError(Exception):
    """A request the balancer cannot forward; answered with `status` and `code`."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class Backend:
    def __init__(self, address):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"backend '{address}' is not HOST:PORT")
        self.host, self.port = host, int(port)
        self.up = True  # assumed until a connection says otherwise
        self.down_until = 0.0

    def __str__(self):
        return f"{self.host}:{self.port}"

    def mark_down(self, reason, seconds):
        self.down_until = time.monotonic() + seconds
        if self.up:
            self.up = False
            log(f"backend {self} down ({reason})")

    def mark_up(self):
        self.down_until = 0.0
        if not self.up:
            self.up = True
            log(f"backend {self} up")

    @property
    def available(self):
        return time.monotonic() >= self.down_until


class Balancer:
    def __init__(self, backends, down_seconds, connect_timeout, idle_timeout, max_body_bytes):
        self.backends = backends
        self.turn = itertools.cycle(range(len(backends)))
        self.down_seconds = down_seconds
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.max_body_bytes = max_body_bytes

    def candidates(self):
        """Every backend once, starting with the next in turn: those not marked down first."""
        start = next(self.turn)
        ordered = self.backends[start:] + self.backends[:start]
        return [b for b in ordered if b.available] + [b for b in ordered if not b.available]

    async def handle(self, client_reader, client_writer):
        peer = client_writer.get_extra_info("peername")
        try:
            try:
                head, body = await self.read_request(client_reader, client_writer, peer[0] if peer else "")
            except ClientError as error:
                client_writer.write(error_response(error.status, error.code, error.message))
                await client_writer.drain()
                return
            except (asyncio.IncompleteReadError, ConnectionError):
                return  # the client went away before sending a whole request
            await self.forward(head, body, client_writer)
        except (ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # either side went away, or the backend broke its framing, mid-answer: nothing more can be said
        finally:
            client_writer.close()
            try:
                await client_writer.wait_closed()
            except (ConnectionError, OSError):
                pass

    async def read_request(self, reader, writer, client_address):
        """The request head rewritten for the backend, and the whole body."""
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise ClientError(400, "INVALID_REQUEST", "the request head is too large") from None
        lines = raw[:-4].decode("latin-1").split("\r\n")
        request_line = lines[0]
        if len(request_line.split(" ")) != 3 or not request_line.split(" ")[2].startswith("HTTP/1."):
            raise ClientError(400, "INVALID_REQUEST", "not an HTTP/1.x request line")
        headers = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                raise ClientError(400, "INVALID_REQUEST", "malformed request header")
            headers.append((name, value.strip()))
        fields = {name.lower(): value for name, value in headers}

        if "100-continue" in fields.get("expect", "").lower():
            # The body is read here, before any backend is chosen: tell the client to send it.
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if "chunked" in fields.get("transfer-encoding", "").lower():
            body = await self.read_chunked(reader)
        elif "content-length" in fields:
            length = fields["content-length"]
            if not length.isdigit():
                raise ClientError(400, "INVALID_REQUEST", "Content-Length is not a number")
            if int(length) > self.max_body_bytes:
                raise ClientError(413, "PAYLOAD_TOO_LARGE", "the request body is too large")
            body = await reader.readexactly(int(length))
        else:
            body = b""

        forwarded = [request_line]
        forwarded += [f"{name}: {value}" for name, value in headers
                      if name.lower() not in HOP_BY_HOP and name.lower() not in ("content-length", "x-forwarded-for")]
        # The gateways believe X-Forwarded-For only from their FACEGATE_TRUSTED_PROXIES.
        chain = ", ".join(filter(None, [fields.get("x-forwarded-for", ""), client_address]))
        if chain:
            forwarded.append(f"X-Forwarded-For: {chain}")
        if body or request_line.split(" ")[0] in ("POST", "PUT", "PATCH"):
            forwarded.append(f"Content-Length: {len(body)}")
        forwarded.append("Connection: close")
        return ("\r\n".join(forwarded) + "\r\n\r\n").encode("latin-1"), body

    async def read_chunked(self, reader):
        body = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ClientError(400, "INVALID_REQUEST", "malformed chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers: dropped
                return bytes(body)
            if len(body) + size > self.max_body_bytes:
                raise ClientError(413, "PAYLOAD_TOO_LARGE", "the request body is too large")
            body += await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n":
                raise ClientError(400, "INVALID_REQUEST", "malformed chunk")

    async def connect(self):
        """A connection to the first backend that takes one, or None."""
        for backend in self.candidates():
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(backend.host, backend.port),
                                                        self.connect_timeout)
            except asyncio.TimeoutError:
                backend.mark_down("connect timed out", self.down_seconds)
                continue
            except ConnectionRefusedError:
                backend.mark_down("connection refused", self.down_seconds)
                continue
            except OSError as error:
                backend.mark_down(error.strerror or type(error).__name__, self.down_seconds)
                continue
            backend.mark_up()
            return backend, reader, writer
        return None

    async def forward(self, head, body, client_writer):
        connected = await self.connect()
        if connected is None:
            client_writer.write(error_response(503, "SERVICE_UNAVAILABLE", "no gateway is reachable right now; try again"))
            await client_writer.drain()
            return
        backend, reader, writer = connected
        try:
            try:
                writer.write(head + body)
                await writer.drain()
                response_head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, asyncio.TimeoutError) as error:
                # The request may have reached the gateway and had its effect: it is not sent again.
                backend.mark_down(f"no answer: {type(error).__name__}", self.down_seconds)
                client_writer.write(error_response(503, "SERVICE_UNAVAILABLE",
                                                   "the gateway went away before answering; the request may or may not have taken effect"))
                await client_writer.drain()
                return
            lines = response_head[:-4].decode("latin-1").split("\r\n")
            fields = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
            kept = [lines[0]] + [line for line in lines[1:]
                                 if line.partition(":")[0].strip().lower() not in ("connection", "keep-alive")]
            client_writer.write(("\r\n".join(kept + ["Connection: close"]) + "\r\n\r\n").encode("latin-1"))
            await client_writer.drain()
            status = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else ""
            await self.relay_body(reader, client_writer, head.split(b" ", 1)[0] == b"HEAD", status, fields)
        finally:
            writer.close()

    async def relay_body(self, reader, client_writer, head_request, status, fields):
        """The response body, piece by piece as it arrives (an event stream reaches the client event by event), framed
        as the backend framed it: Content-Length, chunked, or until the backend closes. A backend that dies mid-answer
        leaves a truncated answer: the client sees the connection end."""

        async def read(operation):
            return await asyncio.wait_for(operation, self.idle_timeout)

        async def send(data):
            client_writer.write(data)
            await client_writer.drain()

        if head_request or status.startswith("1") or status in ("204", "304"):
            return
        if "chunked" in fields.get("transfer-encoding", "").lower():
            while True:
                size_line = await read(reader.readuntil(b"\r\n"))
                await send(size_line)
                if int(size_line.split(b";", 1)[0].strip() or b"0", 16) == 0:
                    while True:  # trailers, then the empty line that ends the message
                        line = await read(reader.readuntil(b"\r\n"))
                        await send(line)
                        if line == b"\r\n":
                            return
                await send(await read(reader.readexactly(int(size_line.split(b";", 1)[0].strip(), 16) + 2)))
        elif fields.get("content-length", "").isdigit():
            remaining = int(fields["content-length"])
            while remaining > 0:
                chunk = await read(reader.read(min(65536, remaining)))
                if not chunk:
                    return
                await send(chunk)
                remaining -= len(chunk)
        else:
            while chunk := await read(reader.read(65536)):
                await send(chunk)


def parse_address(text):
    host, _, port = text.rpartition(":")
    if not port.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not [HOST:]PORT")
    return host or "127.0.0.1", int(port)


async def serve(arguments):
    balancer = Balancer([Backend(b) for b in arguments.backend], arguments.down_seconds, arguments.connect_timeout,
                        arguments.idle_timeout, arguments.max_body_bytes)
    host, port = arguments.listen
    # The handlers come before the socket: a client that sees it listening may stop it at once.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    server = await asyncio.start_server(balancer.handle, host, port, limit=MAX_HEAD_BYTES, reuse_address=True, backlog=1024)
    log(f"listening on {host}:{port}, backends {', '.join(arguments.backend)}")
    async with server:
        await stop.wait()
    log("stopped")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=parse_address, default=("127.0.0.1", 8080), help="[HOST:]PORT (default 127.0.0.1:8080)")
    parser.add_argument("--backend", action="append", required=True, help="HOST:PORT of a gateway (repeat for each)")
    parser.add_argument("--pid-file", help="write this process's pid here (removed at exit)")
    parser.add_argument("--down-seconds", type=float, default=1.0, help="how long a refusing backend is skipped (1)")
    parser.add_argument("--connect-timeout", type=float, default=2.0, help="seconds to wait for a backend to accept (2)")
    parser.add_argument("--idle-timeout", type=float, default=300.0,
                        help="seconds without a byte from the backend before giving up on it (300)")
    parser.add_argument("--max-body-bytes", type=int, default=64 * 1024 * 1024, help="largest request body forwarded")
    arguments = parser.parse_args()
    for backend in arguments.backend:
        try:
            Backend(backend)
        except ValueError as error:
            parser.error(str(error))
    # Until the event loop takes SIGTERM over, it ends the process cleanly (pid file removed, status 0).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if arguments.pid_file:
        with open(arguments.pid_file, "w") as handle:
            handle.write(f"{os.getpid()}\n")
    try:
        asyncio.run(serve(arguments))
    finally:
        if arguments.pid_file:
            try:
                with open(arguments.pid_file) as handle:
                    mine = handle.read().strip() == str(os.getpid())
                if mine:
                    os.remove(arguments.pid_file)
            except FileNotFoundError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
