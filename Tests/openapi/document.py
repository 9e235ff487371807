"""The OpenAPI document as the gateway serves it, read straight from its Swift source (no build needed), and its
validation with `openapi-spec-validator` when that package is importable.

    python3 Tests/openapi/document.py          # validates, prints a short summary; exit 1 on an invalid document
"""

import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "Services", "AuthGateway", "Sources", "OpenAPIDocument.swift")


def raw_text(path=SOURCE, server_url="/"):
    """The raw string literal of `static func json(serverURL:)` in the Swift file, its server `server_url` (the
    gateway's `FACEGATE_PUBLIC_URL`, or `/` when it has none)."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    match = re.search(r'static func json\(serverURL: String\) -> String \{\n\s*#"""\n(.*?)\n"""#', source, re.S)
    if not match:
        raise ValueError(f"{path}: no raw JSON string literal found")
    return match.group(1).replace("\\#(serverURL)", server_url)


def load(path=SOURCE):
    return json.loads(raw_text(path))


def validate(document):
    """Raises on an invalid OpenAPI 3.1 document; returns False when the validator is not installed."""
    try:
        from openapi_spec_validator import validate as check  # noqa: PLC0415
    except ImportError:
        return False
    check(document)
    return True


if __name__ == "__main__":
    document = load()
    try:
        checked = validate(document)
    except Exception as error:  # noqa: BLE001
        print(f"invalid: {error}")
        sys.exit(1)
    operations = sum(1 for item in document["paths"].values() for method in item if method in ("get", "post", "put", "patch", "delete"))
    print(("valid" if checked else "not validated (openapi-spec-validator is not installed)")
          + f": OpenAPI {document['openapi']}, {len(document['paths'])} paths, {operations} operations")
