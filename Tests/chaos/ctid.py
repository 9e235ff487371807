"""The CTID envelope (README, "CTID envelope") for the harness, on the standard library plus libcrypto through ctypes
for AES-128-CBC (the project's venv has no `cryptography`): seal a request, open an answer, and make valid resident ID
numbers (GB 11643-1999). `self_test()` checks the README's worked example byte for byte."""

import base64
import ctypes
import ctypes.util
import hashlib
import hmac
import json
import os

_libcrypto = ctypes.CDLL(ctypes.util.find_library("crypto") or "libcrypto.so.3")
_libcrypto.EVP_CIPHER_CTX_new.restype = ctypes.c_void_p
_libcrypto.EVP_CIPHER_CTX_free.argtypes = [ctypes.c_void_p]
_libcrypto.EVP_aes_128_cbc.restype = ctypes.c_void_p
for _name in ("EVP_EncryptInit_ex", "EVP_DecryptInit_ex"):
    getattr(_libcrypto, _name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
for _name in ("EVP_EncryptUpdate", "EVP_DecryptUpdate"):
    getattr(_libcrypto, _name).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int]
for _name in ("EVP_EncryptFinal_ex", "EVP_DecryptFinal_ex"):
    getattr(_libcrypto, _name).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]


def _aes_128_cbc(key, iv, data, encrypt):
    """AES-128-CBC with PKCS#7 padding (OpenSSL's default)."""
    if len(key) != 16 or len(iv) != 16:
        raise ValueError("AES-128-CBC needs a 16-byte key and IV")
    prefix = "EVP_Encrypt" if encrypt else "EVP_Decrypt"
    context = _libcrypto.EVP_CIPHER_CTX_new()
    if not context:
        raise MemoryError("EVP_CIPHER_CTX_new failed")
    try:
        if getattr(_libcrypto, prefix + "Init_ex")(context, _libcrypto.EVP_aes_128_cbc(), None, key, iv) != 1:
            raise ValueError("cipher init failed")
        out = ctypes.create_string_buffer(len(data) + 32)
        written, final = ctypes.c_int(0), ctypes.c_int(0)
        if getattr(_libcrypto, prefix + "Update")(context, out, ctypes.byref(written), data, len(data)) != 1:
            raise ValueError("cipher update failed")
        tail = ctypes.cast(ctypes.addressof(out) + written.value, ctypes.c_char_p)
        if getattr(_libcrypto, prefix + "Final_ex")(context, tail, ctypes.byref(final)) != 1:
            raise ValueError("bad padding")
        return out.raw[:written.value + final.value]
    finally:
        _libcrypto.EVP_CIPHER_CTX_free(context)


def mac_key(ctid_key):
    """HKDF-SHA256(IKM = ctidKey, salt = empty, info = "facegate ctid mac v1", L = 32): one block of expand."""
    prk = hmac.new(b"\x00" * 32, ctid_key, hashlib.sha256).digest()
    return hmac.new(prk, b"facegate ctid mac v1\x01", hashlib.sha256).digest()


def seal(plaintext, app_id, ctid_key, iv=None):
    """The envelope (a dict) carrying `plaintext` (bytes) for `app_id` under the app's 16-byte `ctid_key`."""
    iv = iv or os.urandom(16)
    ciphertext = _aes_128_cbc(ctid_key, iv, plaintext, encrypt=True)
    tag = hmac.new(mac_key(ctid_key), b"v1" + iv + ciphertext, hashlib.sha256).digest()
    return {"version": "v1", "appId": app_id, "iv": base64.b64encode(iv).decode(),
            "data": base64.b64encode(ciphertext).decode(), "mac": base64.b64encode(tag).decode()}


def open_envelope(envelope, app_id, ctid_key):
    """The plaintext of an answer envelope, after checking its version, app and tag; ValueError otherwise."""
    if envelope.get("version") != "v1" or envelope.get("appId") != app_id:
        raise ValueError("not a v1 envelope of this app")
    iv, ciphertext, tag = (base64.b64decode(envelope[name]) for name in ("iv", "data", "mac"))
    expected = hmac.new(mac_key(ctid_key), b"v1" + iv + ciphertext, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, tag):
        raise ValueError("the answer's tag does not verify")
    return _aes_128_cbc(ctid_key, iv, ciphertext, encrypt=False)


def request_body(app_id, ctid_key, fields):
    """The JSON body of `POST /v1/ctid/verifications` for the request object `fields`."""
    return json.dumps(seal(json.dumps(fields, ensure_ascii=False).encode(), app_id, ctid_key)).encode()


_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def resident_id(first17):
    """An 18-character resident ID number: the 17 digits and their ISO 7064 MOD 11-2 check character."""
    total = sum(int(digit) * weight for digit, weight in zip(first17, _WEIGHTS))
    return first17 + "10X98765432"[total % 11]


def self_test():
    """The README's worked example, byte for byte, and a round trip."""
    key = bytes(range(16))
    iv = bytes(range(0x10, 0x20))
    plaintext = b'{"bizSerialNum":"0123456789abcdef0123456789abcdef","randNum":"483920"}'
    app_id = "6f1c2d3e-0000-4000-8000-000000000001"
    assert mac_key(key).hex() == "c24ff5f80d8bd8e6608850bcb088ab5ff5d4d59b4d1d99e435e9240a31db41d8"
    envelope = seal(plaintext, app_id, key, iv=iv)
    assert envelope["data"] == ("HxS4SnjdMhLCp1nssqycq9NdqC5FHsZZt1VVg274civHmlCaUdp7n7mpi6GMkcun0kOurW9hdmZG/ki4UxkEhm/AC8uXIdAX8T9zE7PpyFM="), envelope
    assert envelope["mac"] == "DFEumrdGktimvIfzGD54fe/StBBmiQxSByaW+Eg2DAE=", envelope
    assert open_envelope(envelope, app_id, key) == plaintext
    assert resident_id("11010119900307123")[-1] in "0123456789X"


if __name__ == "__main__":
    self_test()
    print("ctid envelope: README example reproduced")
