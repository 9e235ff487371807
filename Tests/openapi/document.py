"""The OpenAPI document as a gateway serves it (generated from its route table, so there is no copy in the sources),
and its validation with `openapi-spec-validator` when that package is importable.

    python3 Tests/openapi/document.py http://127.0.0.1:8080   # validates, prints a short summary; exit 1 when invalid
"""

import json
import os
import sys
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load(base_url):
    """The document served at `base_url` + /openapi.json."""
    with urllib.request.urlopen(base_url.rstrip("/") + "/openapi.json", timeout=30) as answer:
        return json.load(answer)


def validate(document):
    """Raises on an invalid OpenAPI 3.1 document; returns False when the validator is not installed."""
    try:
        from openapi_spec_validator import validate as check  # noqa: PLC0415
    except ImportError:
        return False
    check(document)
    return True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: document.py GATEWAY_URL")
    document = load(sys.argv[1])
    try:
        checked = validate(document)
    except Exception as error:  # noqa: BLE001
        print(f"invalid: {error}")
        sys.exit(1)
    operations = sum(1 for item in document["paths"].values() for method in item if method in ("get", "post", "put", "patch", "delete"))
    print(("valid" if checked else "not validated (openapi-spec-validator is not installed)")
          + f": OpenAPI {document['openapi']}, {len(document['paths'])} paths, {operations} operations")
