#!/usr/bin/env python3
"""Python peer of `facegate-bench ctid`: the same CTID v1 envelope (AES-128-CBC/PKCS#7, HKDF-SHA256 MAC key,
HMAC-SHA256 over "v1" || iv || ciphertext, tag checked before decryption) with the `cryptography` package.
It also checks the README's worked example, so it doubles as an independent implementation.

    pip install cryptography
    python3 Benchmarks/peers/ctid_envelope_peer.py [--iterations 20000] [--results Benchmarks/RESULTS.md | --no-results]
"""
import argparse
import base64
import datetime
import hmac
import json
import os
import platform
import time

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives import hmac as chmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class InvalidEnvelope(Exception):
    pass


def mac_key(key):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"facegate ctid mac v1").derive(key)


def tag(key, iv, ciphertext):
    h = chmac.HMAC(mac_key(key), hashes.SHA256())
    h.update(b"v1" + iv + ciphertext)
    return h.finalize()


def seal(plaintext, app_id, key, iv=None):
    iv = iv or os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    return {"version": "v1", "appId": app_id, "iv": base64.b64encode(iv).decode(),
            "data": base64.b64encode(ciphertext).decode(), "mac": base64.b64encode(tag(key, iv, ciphertext)).decode()}


def open_envelope(envelope, app_id, key):
    try:
        if envelope["version"] != "v1" or envelope["appId"] != app_id:
            raise InvalidEnvelope()
        iv = base64.b64decode(envelope["iv"], validate=True)
        ciphertext = base64.b64decode(envelope["data"], validate=True)
        mac = base64.b64decode(envelope["mac"], validate=True)
        if len(iv) != 16 or not ciphertext or len(ciphertext) % 16:
            raise InvalidEnvelope()
        if not hmac.compare_digest(tag(key, iv, ciphertext), mac):
            raise InvalidEnvelope()
        decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        padded = decryptor.update(ciphertext) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        return unpadder.update(padded) + unpadder.finalize()
    except InvalidEnvelope:
        raise
    except Exception:
        raise InvalidEnvelope()


def check_worked_example():
    key, iv = bytes(range(16)), bytes(range(16, 32))
    plaintext = b'{"bizSerialNum":"0123456789abcdef0123456789abcdef","randNum":"483920"}'
    envelope = seal(plaintext, "6f1c2d3e-0000-4000-8000-000000000001", key, iv)
    assert envelope["mac"] == "DFEumrdGktimvIfzGD54fe/StBBmiQxSByaW+Eg2DAE=", envelope
    assert open_envelope(envelope, envelope["appId"], key) == plaintext


def measure(label, count, body):
    for _ in range(min(count // 10, 1000)):
        body()
    start = time.perf_counter()
    for _ in range(count):
        body()
    seconds = time.perf_counter() - start
    return f"| {label} | {count} | {seconds / count * 1e6:.1f} | {count / seconds:.0f} |"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--results", default="Benchmarks/RESULTS.md")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args()
    check_worked_example()
    key, app = os.urandom(16), "6f1c2d3e-0000-4000-8000-000000000001"
    small = json.dumps({"bizSerialNum": "0123456789abcdef0123456789abcdef", "randNum": "483920", "idNumber": "11010519491231002X",
                        "name": "张三", "validDateStart": "20200101", "validDateEnd": "20400101"}, ensure_ascii=False).encode()
    photo = json.dumps({"bizSerialNum": "0123456789abcdef0123456789abcdef", "randNum": "483920", "idNumber": "11010519491231002X",
                        "name": "张三", "photoData": base64.b64encode(os.urandom(30000)).decode()}, ensure_ascii=False).encode()
    sealed_small, sealed_photo = seal(small, app, key), seal(photo, app, key)
    forged = dict(sealed_small)
    raw = bytearray(base64.b64decode(forged["mac"]))
    raw[0] ^= 1
    forged["mac"] = base64.b64encode(bytes(raw)).decode()

    def refuse():
        try:
            open_envelope(forged, app, key)
        except InvalidEnvelope:
            pass

    n = args.iterations
    rows = [
        measure(f"seal, {len(small)} B request", n, lambda: seal(small, app, key)),
        measure(f"open, {len(small)} B request", n, lambda: open_envelope(sealed_small, app, key)),
        measure(f"seal, {len(photo)} B request with photo", n // 10, lambda: seal(photo, app, key)),
        measure(f"open, {len(photo)} B request with photo", n // 10, lambda: open_envelope(sealed_photo, app, key)),
        measure(f"refuse forged tag, {len(small)} B", n, refuse),
    ]
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown CPU")
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    section = (f"\n## CTID envelope (Python `cryptography` peer)\n\n_{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')} · "
               f"{platform.machine()}, {os.cpu_count()} cores (nproc), {model}_\n\n"
               f"Python {platform.python_version()}, cryptography, one thread; worked example checked. Load average {load}.\n\n"
               "| operation | iterations | µs per op | ops/s |\n| --- | --- | --- | --- |\n" + "\n".join(rows) + "\n")
    print(section)
    if not args.no_results:
        with open(args.results, "a") as f:
            f.write(section)


if __name__ == "__main__":
    main()
