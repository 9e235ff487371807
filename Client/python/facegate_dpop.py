"""DPoP proofs (RFC 9449) for FaceGate from Python: a P-256 device key and the `DPoP` header of one request.

    key = DeviceKey.load_or_create("device.pem")      # the device's identity is key.thumbprint (RFC 7638)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "image/jpeg",
               "DPoP": key.proof("POST", "https://facegate.example/v1/face-login", access_token=token, body=photo)}

`htu` is the request URL without its query; `ath` hashes the access token; `dgst` hashes the exact body bytes sent.
Needs the `cryptography` package.
"""
import base64
import hashlib
import json
import os
import secrets
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class DeviceKey:
    def __init__(self, private_key: ec.EllipticCurvePrivateKey):
        self.private_key = private_key
        numbers = private_key.public_key().public_numbers()
        # RFC 7638: the required members in lexicographic order, no whitespace.
        self.jwk = {"crv": "P-256", "kty": "EC", "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}
        self.thumbprint = b64url(hashlib.sha256(_json(self.jwk)).digest())

    @classmethod
    def generate(cls) -> "DeviceKey":
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def load_or_create(cls, path: str) -> "DeviceKey":
        """The key in `path` (PEM, PKCS#8), created there with mode 0600 on first use."""
        if os.path.exists(path):
            with open(path, "rb") as file:
                return cls(serialization.load_pem_private_key(file.read(), password=None))
        key = cls.generate()
        pem = key.private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(pem)
        return key

    def proof(self, method: str, url: str, access_token: str | None = None, body: bytes = b"") -> str:
        claims = {"jti": b64url(secrets.token_bytes(18)), "htm": method, "htu": url.split("?", 1)[0], "iat": int(time.time())}
        if access_token:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode()).digest())
        if body:
            claims["dgst"] = b64url(hashlib.sha256(body).digest())
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk}
        signing_input = b64url(_json(header)) + "." + b64url(_json(claims))
        r, s = decode_dss_signature(self.private_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        # JWS ES256 signatures are r ‖ s, 32 bytes each (RFC 7518 §3.4), not DER.
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
