#!/usr/bin/env python3
"""Offline validation of FaceGate's deployment files.

Checks, without a Docker engine or a Kubernetes cluster:
  docker-compose.yml    Compose Specification JSON schema (as shipped by check-jsonschema)
                               + the runtime contract (env names per service, secrets, ports)
                               + database roles: each service logs in as its own role with its
                               own password, never as the schema owner or a superuser
  deploy/docker/Dockerfile     hadolint + non-root USER, HEALTHCHECK, pinned base images,
                               every executable built, COPY sources not excluded by the ignore file
  deploy/k8s/**                every manifest against the Kubernetes JSON schemas (strict,
                               kubernetes-validate), ScaledObjects against deploy/schemas/,
                               and both kustomize layouts rendered (kubectl kustomize) and checked
                               as a whole: env names, secret key -> variable, probes, resources,
                               selectors, autoscaler limits, gateway shard count = matcher shards,
                               each workload's database URL from its own role's Secret key,
                               network policies (default deny, admitted ports, egress)
  message-signing keys         every service gets its own FACEGATE_SERVICE_KEY (compose: its own
                               .env variable; Kubernetes: its own Secret key) and nobody else's,
                               the migrate one-shot none; all four get the same
                               FACEGATE_SERVICE_PUBLIC_KEYS, naming every service
  token and audit keys         FACEGATE_SIGNING_KEY and FACEGATE_KIOSK_PUBLIC_KEYS reach the gateway
                               only, FACEGATE_KIOSK_SIGNING_KEY the kiosk-orchestrator only;
                               FACEGATE_AUDIT_KEY reaches exactly the three audit writers, from one
                               source, never the matcher or the migrate one-shot (under any name)
  secrets                      every secret variable from a Secret (Kubernetes) or a .env
                               variable (compose), never written into a file, never in a ConfigMap
  Kafka TLS/SASL               the broker security variables: known values, SASL with a mechanism,
                               user and password (a secret), certificate files mounted, the topics
                               Job and the autoscaler configured alike; optional Kustomize
                               components (deploy/k8s/kafka-tls) rendered onto both layouts
  scripts and env examples     bash syntax, topic table and admin ports equal to the contract,
                               short retention on the topics that carry images
  deploy/prometheus/alerts.yml the example alert rules: the rule-file shape, every rule an alert with
                               expr, for, labels.severity and annotations summary, description and
                               runbook (a section of deploy/README.md that exists), every expr parsed
                               as PromQL (promql-parser), every metric it reads one the Swift sources
                               register (Shared/, Services/) or `up`, labels the annotations print
                               kept by the expression, metrics every job exposes (up, process_*)
                               limited to the four services' jobs; the component deploy/k8s/monitoring
                               (PodMonitor + PrometheusRule) rendered onto both layouts, its
                               PrometheusRule's groups equal to alerts.yml, its PodMonitor scraping
                               every service's admin port with job = the service's name

Prints one line per file checked ("ok" or "FAIL", problems indented below) and exits 1 when
anything is wrong. --only NAME (repeatable; a file or a layout, named as printed) checks just
those; the self-tests (Tests/deploy) check the file they break that way, through validate(). The
contract below mirrors the runtime contract the services implement (environment variables, admin
ports, topics); keep the two in step. --write-prometheus-rule regenerates
deploy/k8s/monitoring/prometheus-rule.yaml from deploy/prometheus/alerts.yml and exits.
"""
from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import functools

import jsonschema
import kubernetes_validate.utils
import yaml

# The schema package re-reads its (large) definition files, and lists its schema folders, for
# every object; neither changes during a run.
kubernetes_validate.utils.schema_contents = functools.lru_cache(maxsize=None)(kubernetes_validate.utils.schema_contents)
kubernetes_validate.utils.all_versions = functools.lru_cache(maxsize=None)(kubernetes_validate.utils.all_versions)
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# --------------------------------------------------------------------------------------------
# The runtime contract.

EXECUTABLES = ["auth-gateway", "matcher-worker", "ctid-verifier", "kiosk-orchestrator", "facegate"]
SERVICES = EXECUTABLES[:4]
ADMIN_PORTS = {"auth-gateway": 9100, "matcher-worker": 9101, "ctid-verifier": 9102, "kiosk-orchestrator": 9103}
HTTP_PORT = 8080

# Mirrors the Configuration table of README.md (names, who reads them, required or not).
COMMON_ENV = {
    "FACEGATE_DATABASE_URL", "FACEGATE_KAFKA_BROKERS", "FACEGATE_ADMIN_HOST", "FACEGATE_ADMIN_PORT",
    "FACEGATE_LOG_LEVEL", "FACEGATE_INSTANCE_ID", "FACEGATE_TOPIC_PREFIX", "FACEGATE_SHUTDOWN_SECONDS",
    "FACEGATE_DATABASE_STATEMENT_TIMEOUT_MS",
}
SEALING_KEY = "FACEGATE_SEALING_KEY"
CTID_PRIVATE_KEY = "FACEGATE_CTID_PRIVATE_KEY"
CTID_PUBLIC_KEY = "FACEGATE_CTID_PUBLIC_KEY"
SERVICE_ENV = {
    # auth-gateway never gets the sealing key nor the CTID private key: it handles no sealed data
    # and only seals institution keys *to* the ctid-verifier's public key (least privilege).
    # The gateway's token key (FACEGATE_SIGNING_KEY) is its own: access, face and device identity tokens. It
    # knows only the public half of the kiosk-orchestrator's token key (FACEGATE_KIOSK_PUBLIC_KEYS).
    "auth-gateway": {
        "FACEGATE_HTTP_HOST", "FACEGATE_HTTP_PORT", "FACEGATE_HTTP_THREADS", "FACEGATE_HTTP_MAX_CONNECTIONS",
        "FACEGATE_HTTP_PER_IP_LIMIT", "FACEGATE_ADMIN_KEY", "FACEGATE_SIGNING_KEY",
        "FACEGATE_PREVIOUS_SIGNING_KEYS", CTID_PUBLIC_KEY, "FACEGATE_ADMIN_KEY_SHA256", "FACEGATE_ISSUER", "FACEGATE_ACCESS_TOKEN_TTL_SECONDS",
        "FACEGATE_IDENTITY_TOKEN_TTL_SECONDS", "FACEGATE_CONFIRMATION_TTL_SECONDS",
        "FACEGATE_REQUEST_TIMEOUT_SECONDS", "FACEGATE_MAX_BODY_BYTES", "FACEGATE_MATCHER_SHARDS",
        "FACEGATE_THROTTLE_AFTER", "FACEGATE_THROTTLE_SECONDS", "FACEGATE_LOCK_AFTER",
        "FACEGATE_SECRET_GRACE_SECONDS", "FACEGATE_SWEEP_SECONDS", "FACEGATE_CONSOLE_DIR",
        "FACEGATE_ADDRESS_THROTTLE_AFTER", "FACEGATE_ADDRESS_FAILURE_WINDOW_SECONDS", "FACEGATE_TRUSTED_PROXIES", "FACEGATE_PUBLIC_URL",
        "FACEGATE_KIOSK_LOGIN_RATE", "FACEGATE_KIOSK_LOGIN_BURST", "FACEGATE_SERVER_CALL_RATE", "FACEGATE_SERVER_CALL_BURST", "FACEGATE_REFUSAL_SUMMARY_SECONDS",
        "FACEGATE_DPOP_MAX_AGE_SECONDS", "FACEGATE_BINDING_TICKET_TTL_SECONDS", "FACEGATE_MAX_FACES_PER_USER",
        "FACEGATE_CTID_SERIAL_TTL_SECONDS", "FACEGATE_KIOSK_PUBLIC_KEYS",
        # How often it signs every app's audit chain head and publishes it (0: never); and, for an
        # installation upgraded from an unkeyed audit trail, whether chains may start with unkeyed rows.
        "FACEGATE_AUDIT_CHECKPOINT_SECONDS", "FACEGATE_AUDIT_ACCEPT_UNKEYED",
    },
    "matcher-worker": {
        SEALING_KEY, "FACEGATE_MODEL_DIR", "FACEGATE_MAX_PIXELS", "MATCHER_ENGINES", "MATCHER_LONE_JOB_THREADS", "MATCHER_SHARD_INDEX",
        "MATCHER_SHARD_COUNT", "MATCHER_GALLERY_STORAGE", "MATCHER_RECONCILE_SECONDS", "MATCHER_MODELS",
        "MATCHER_DEFAULT_THRESHOLD", "MATCHER_AMBIGUITY_MARGIN", "MATCHER_MIN_FACE_WIDTH", "MATCHER_MIN_SHARPNESS",
    },
    "ctid-verifier": {SEALING_KEY, CTID_PRIVATE_KEY, "FACEGATE_CTID_SERIAL_TTL_SECONDS"},
    # It signs kiosk customers' identity tokens with a key of its own (never the gateway's) and seals
    # selfies and portraits between steps.
    "kiosk-orchestrator": {
        "FACEGATE_KIOSK_SESSION_TTL_SECONDS", "FACEGATE_KIOSK_SIGNING_KEY", SEALING_KEY, "FACEGATE_ISSUER",
        "FACEGATE_IDENTITY_TOKEN_TTL_SECONDS", "FACEGATE_REQUEST_TIMEOUT_SECONDS", "FACEGATE_MATCHER_SHARDS",
        "FACEGATE_TESSDATA_PREFIX", "FACEGATE_KIOSK_RETENTION_SECONDS",
    },
    # The CLI; in the deployment it only runs `migrate`, which needs no key at all.
    "facegate": {"FACEGATE_URL", "FACEGATE_AUDITOR_KEY"},
}
REQUIRED_ENV = {
    # FACEGATE_KIOSK_PUBLIC_KEYS is optional to the gateway itself, but a deployment runs a
    # kiosk-orchestrator, whose identity tokens the gateway refuses without it.
    "auth-gateway": {"FACEGATE_DATABASE_URL", "FACEGATE_KAFKA_BROKERS", "FACEGATE_SIGNING_KEY", CTID_PUBLIC_KEY,
                     "FACEGATE_KIOSK_PUBLIC_KEYS"},
    "matcher-worker": {"FACEGATE_DATABASE_URL", "FACEGATE_KAFKA_BROKERS", SEALING_KEY, "FACEGATE_MODEL_DIR"},
    "ctid-verifier": {"FACEGATE_DATABASE_URL", "FACEGATE_KAFKA_BROKERS", SEALING_KEY, CTID_PRIVATE_KEY},
    "kiosk-orchestrator": {"FACEGATE_DATABASE_URL", "FACEGATE_KAFKA_BROKERS", "FACEGATE_KIOSK_SIGNING_KEY", SEALING_KEY},
    "facegate": {"FACEGATE_DATABASE_URL"},
}

# Token keys (README.md#security, "Token keys are per service").
SIGNING_KEY = "FACEGATE_SIGNING_KEY"
KIOSK_SIGNING_KEY = "FACEGATE_KIOSK_SIGNING_KEY"
KIOSK_PUBLIC_KEYS = "FACEGATE_KIOSK_PUBLIC_KEYS"

# The keyed audit trail: the gateway, ctid-verifier and kiosk-orchestrator append to the same per-app
# chains, so all three hold the same FACEGATE_AUDIT_KEY (and the same FACEGATE_PREVIOUS_AUDIT_KEYS after a
# rotation); the matcher writes no audit rows and the migrations need no key.
AUDIT_KEY = "FACEGATE_AUDIT_KEY"
PREVIOUS_AUDIT_KEYS = "FACEGATE_PREVIOUS_AUDIT_KEYS"
AUDIT_WRITERS = ("auth-gateway", "ctid-verifier", "kiosk-orchestrator")
for _service in AUDIT_WRITERS:
    SERVICE_ENV[_service] |= {AUDIT_KEY, PREVIOUS_AUDIT_KEYS}
    REQUIRED_ENV[_service] |= {AUDIT_KEY}

# Broker TLS and SASL (README.md#configuration): read by the four services, handed to librdkafka.
KAFKA_SECURITY_PROTOCOL = "FACEGATE_KAFKA_SECURITY_PROTOCOL"
KAFKA_SASL_MECHANISM = "FACEGATE_KAFKA_SASL_MECHANISM"
KAFKA_SASL_USERNAME = "FACEGATE_KAFKA_SASL_USERNAME"
KAFKA_SASL_PASSWORD = "FACEGATE_KAFKA_SASL_PASSWORD"
KAFKA_SSL_FILES = ("FACEGATE_KAFKA_SSL_CA_LOCATION", "FACEGATE_KAFKA_SSL_CERTIFICATE_LOCATION",
                   "FACEGATE_KAFKA_SSL_KEY_LOCATION")
KAFKA_SECURITY_ENV = {KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD,
                      *KAFKA_SSL_FILES}
KAFKA_PROTOCOLS = {"plaintext", "ssl", "sasl_plaintext", "sasl_ssl"}
# The services pass a user name and password only: mechanisms that need more (GSSAPI, OAUTHBEARER) cannot work.
KAFKA_SASL_MECHANISMS = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

# Kafka message signing (README.md#security, "Kafka messages are signed"): every service signs
# what it produces with its own Ed25519 key (FACEGATE_SERVICE_KEY, base64 of the 32-byte seed) and
# trusts the public keys of FACEGATE_SERVICE_PUBLIC_KEYS (service=base64,...; the same list for
# all four). Both are required by the four services; the CLI (the migrate one-shot) takes neither.
SERVICE_KEY = "FACEGATE_SERVICE_KEY"
SERVICE_PUBLIC_KEYS = "FACEGATE_SERVICE_PUBLIC_KEYS"
for _service in SERVICES:
    SERVICE_ENV[_service] |= {SERVICE_KEY, SERVICE_PUBLIC_KEYS} | KAFKA_SECURITY_ENV
    REQUIRED_ENV[_service] |= {SERVICE_KEY, SERVICE_PUBLIC_KEYS}
# Where each service's own seed comes from: compose interpolates it from this .env variable
# (the names `facegate keys` prints), Kubernetes maps this key of the Secret facegate-secrets.
SERVICE_KEY_VARIABLES = {s: "FACEGATE_SERVICE_KEY_" + s.upper().replace("-", "_") for s in SERVICES}
SERVICE_KEY_SECRET_KEYS = {s: f"service-key-{s}" for s in SERVICES}
# The value base/service-public-keys.env ships with until an operator fills in the keys.
PUBLIC_KEY_PLACEHOLDER = "CHANGE-ME"
# The Kafka SASL password of each service: its own user on the broker (compose: this .env variable;
# Kubernetes: this key of facegate-secrets), so the broker's ACLs can tell the services apart.
KAFKA_PASSWORD_VARIABLES = {s: f"{KAFKA_SASL_PASSWORD}_" + s.upper().replace("-", "_") for s in SERVICES}
KAFKA_PASSWORD_SECRET_KEYS = {s: f"kafka-password-{s}" for s in SERVICES}
# Secret keys that belong to one service: (owner, what the key is).
OWNED_SECRET_KEYS = {
    **{key: (service, "message-signing key") for service, key in SERVICE_KEY_SECRET_KEYS.items()},
    **{key: (service, "Kafka SASL password") for service, key in KAFKA_PASSWORD_SECRET_KEYS.items()},
}
# Values with a closed set of choices (checked where the value is literal).
ENV_CHOICES = {"MATCHER_GALLERY_STORAGE": {"float32", "float16", "int8"},
               KAFKA_SECURITY_PROTOCOL: KAFKA_PROTOCOLS, KAFKA_SASL_MECHANISM: KAFKA_SASL_MECHANISMS}
# Every name of the contract; any other FACEGATE_* / MATCHER_* name is a typo.
CONTRACT_ENV = COMMON_ENV.union(*SERVICE_ENV.values())
CONTRACT_PREFIXES = ("FACEGATE_", "MATCHER_")
ALL_SERVICES_ENV = COMMON_ENV.union(*(SERVICE_ENV[s] for s in EXECUTABLES))

# Secrets: only ever from the Secret facegate-secrets (Kubernetes, secretKeyRef) or a .env
# variable (compose, ${NAME}); never written into a manifest, the compose file or a ConfigMap. The
# database URLs and the message-signing keys have checks of their own (roles, one key per service).
SECRET_ENV = {SIGNING_KEY, "FACEGATE_PREVIOUS_SIGNING_KEYS", "FACEGATE_ADMIN_KEY", KIOSK_SIGNING_KEY, SEALING_KEY,
              CTID_PRIVATE_KEY, AUDIT_KEY, PREVIOUS_AUDIT_KEYS, KAFKA_SASL_PASSWORD}
# Who may hold each secret, under any name: the executables whose contract reads it.
SECRET_READERS = {name: tuple(e for e in EXECUTABLES if name in SERVICE_ENV[e]) for name in SECRET_ENV | {SERVICE_KEY}}
# What each secret is, for messages.
SECRET_WHAT = {SIGNING_KEY: "the gateway's token key", "FACEGATE_PREVIOUS_SIGNING_KEYS": "the gateway's retired token keys",
               "FACEGATE_ADMIN_KEY": "the bootstrap operator key", KIOSK_SIGNING_KEY: "the kiosk-orchestrator's token key",
               SEALING_KEY: "the sealing key", CTID_PRIVATE_KEY: "the CTID private key", AUDIT_KEY: "the audit chain key",
               PREVIOUS_AUDIT_KEYS: "the retired audit chain keys", KAFKA_SASL_PASSWORD: "a Kafka SASL password"}
# Public-key lists whose entries are each base64 of a 32-byte key, or the shipped placeholder.
KEY_LIST_ENV = {KIOSK_PUBLIC_KEYS}

# Database roles (Schema.serviceLogins and README.md#security): the schema owner runs the
# migrations; each service logs in as its own role, never as the owner or a superuser.
SCHEMA_OWNER = "facegate_owner"
SERVICE_ROLES = {"auth-gateway": "facegate_gateway", "matcher-worker": "facegate_matcher",
                 "ctid-verifier": "facegate_ctid", "kiosk-orchestrator": "facegate_kiosk"}
DATABASE_ROLES = {**SERVICE_ROLES, "facegate": SCHEMA_OWNER}
SUPERUSERS = {"postgres"}
# Kubernetes: the Secret key each executable's FACEGATE_DATABASE_URL comes from.
DATABASE_URL_KEYS = {"auth-gateway": "gateway-database-url", "matcher-worker": "matcher-database-url",
                     "ctid-verifier": "ctid-database-url", "kiosk-orchestrator": "kiosk-database-url",
                     "facegate": "migrator-database-url"}
# The variables deploy/k8s/base/files/set-role-passwords.sh reads each role's URL from.
ROLE_PASSWORD_SCRIPT = "set-role-passwords.sh"
ROLE_PASSWORD_ENV = {"facegate": "DATABASE_URL_OWNER", "auth-gateway": "DATABASE_URL_GATEWAY",
                     "matcher-worker": "DATABASE_URL_MATCHER", "ctid-verifier": "DATABASE_URL_CTID",
                     "kiosk-orchestrator": "DATABASE_URL_KIOSK"}

TOPICS = {
    "face.jobs.v1": (12, {}), "ctid.jobs.v1": (6, {}), "kiosk.commands.v1": (6, {}),
    "replies.auth-gateway.v1": (16, {}), "replies.ctid-verifier.v1": (16, {}),
    "replies.kiosk-orchestrator.v1": (16, {}),
    "gallery.changes.v1": (6, {"cleanup.policy": "compact"}),
    "kiosk.events.v1": (6, {}), "audit.transactions.v1": (6, {}),
    "face.jobs.v1.dlq": (1, {}), "ctid.jobs.v1.dlq": (1, {}), "kiosk.commands.v1.dlq": (1, {}),
}
MATCHER_GROUP = "matcher-worker"
MATCHER_TOPIC = "face.jobs.v1"
# Job topics carry photos, portraits and document images, their replies personal data: records
# are kept minutes, not the broker's default days. (Dead letters keep no value: metadata only.)
SHORT_RETENTION_TOPICS = {"face.jobs.v1", "ctid.jobs.v1", "kiosk.commands.v1", "replies.auth-gateway.v1",
                          "replies.ctid-verifier.v1", "replies.kiosk-orchestrator.v1"}
MAX_SHORT_RETENTION_MS = 3_600_000

# Kubernetes releases the manifests must validate against: the oldest still in common
# support and the newest the schema package knows.
KUBERNETES_VERSIONS = ["1.30.0", None]

ROOT_FILES = {
    "compose": "docker-compose.yml",
    "compose_env": "deploy/compose.env.example",
    "dockerfile": "deploy/docker/Dockerfile",
    "dockerignore": "deploy/docker/Dockerfile.dockerignore",
    "hadolint": "deploy/docker/hadolint.yaml",
    "entrypoint": "deploy/docker/entrypoint.sh",
    "healthcheck": "deploy/docker/healthcheck.sh",
    "topics": "deploy/k8s/base/files/create-topics.sh",
    "secret_example": "deploy/k8s/secret.example.yaml",
    "keda_schema": "deploy/schemas/keda-scaledobject.schema.json",
    "keda_auth_schema": "deploy/schemas/keda-triggerauthentication.schema.json",
    "prometheus_rule_schema": "deploy/schemas/prometheus-rule.schema.json",
    "pod_monitor_schema": "deploy/schemas/pod-monitor.schema.json",
    "alerts": "deploy/prometheus/alerts.yml",
    "dashboard": "deploy/grafana/facegate.json",
    "prometheus_rule": "deploy/k8s/monitoring/prometheus-rule.yaml",
    "deploy_readme": "deploy/README.md",
    "package": "Package.swift",
}
KUSTOMIZE_LAYOUTS = ["deploy/k8s", "deploy/k8s/sharded"]
# Optional Kustomize components (kind: Component): each is rendered onto every layout and checked
# like the layout itself, so an example that is not applied by default is validated all the same.
KUSTOMIZE_COMPONENTS = ["deploy/k8s/kafka-tls", "deploy/k8s/monitoring"]

# Metrics and alerts (deploy/README.md#metrics-and-alerts). The services register their metrics in the
# Swift sources under these folders, as registry.counter("name", ...), .gauge("name", ...) or
# .histogram("name", ...); a histogram is exposed as name_bucket, name_sum and name_count.
METRIC_SOURCE_DIRS = ("Shared", "Services")
METRIC_REGISTRATION = re.compile(r'\b(counter|gauge|histogram)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"')
# Series Prometheus makes itself for every target.
SCRAPE_METRICS = {"up"}
# Metrics every job with a client library exposes too: a rule reading them names FaceGate's jobs.
SHARED_METRIC_PREFIXES = ("process_",)
# The alert rules' job label is the service's name (the PodMonitor's jobLabel, the scrape examples).
JOB_LABEL_SOURCE = "app.kubernetes.io/name"
ALERT_SEVERITIES = {"critical", "warning", "info"}
ALERT_ANNOTATIONS = ("summary", "description", "runbook")


# --------------------------------------------------------------------------------------------
# Reporting.

@dataclass
class FileReport:
    path: str
    what: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.problems.append(" ".join(message.split()))

    def warn(self, message: str) -> None:
        self.warnings.append(" ".join(message.split()))


class Reporter:
    """Collects one report per file checked. With `only` (names as printed: a file's path, or a
    layout's "<layout> (kubectl kustomize)"), just those are checked and printed; the checks of
    other files run only as far as the ones asked for need their results."""

    def __init__(self, only: Iterable[str] | None = None) -> None:
        self.reports: list[FileReport] = []
        self.only = None if only is None else set(only)

    def wants(self, path: str) -> bool:
        return self.only is None or path in self.only

    def file(self, path: str, what: str) -> FileReport:
        report = FileReport(path, what)
        self.reports.append(report)
        return report

    def lines(self) -> tuple[list[str], int]:
        """The printed lines and the exit status (1 when a file checked has problems)."""
        lines: list[str] = []
        reports = [r for r in self.reports if self.wants(r.path)]
        failed = 0
        for report in reports:
            if report.problems:
                failed += 1
                lines.append(f"FAIL  {report.path}  ({report.what})")
                lines += [f"      - {problem}" for problem in report.problems]
            elif report.warnings:
                lines.append(f"warn  {report.path}  ({report.what})")
            else:
                lines.append(f"ok    {report.path}  ({report.what})")
            lines += [f"      ! {warning}" for warning in report.warnings]
        lines.append(f"validate-deploy: {len(reports)} files checked, {failed} with problems")
        return lines, 1 if failed else 0

    def print(self) -> int:
        lines, status = self.lines()
        for line in lines:
            print(line)
        return status


# --------------------------------------------------------------------------------------------
# Helpers.

def tool(name: str) -> str:
    """A console script installed beside this interpreter (the validation venv)."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"validate-deploy: {name} not found (run scripts/validate-deploy.sh)")
    return found


def load_yaml_documents(path: Path) -> list[Any]:
    with path.open() as stream:
        return [doc for doc in yaml.load_all(stream, Loader=YAML_LOADER) if doc is not None]


def env_names(environment: Any) -> dict[str, Any]:
    """Compose environment (mapping or KEY=VALUE list) as a dict."""
    if environment is None:
        return {}
    if isinstance(environment, dict):
        return dict(environment)
    result = {}
    for item in environment:
        key, _, value = str(item).partition("=")
        result[key] = value
    return result


def resolve_default_interpolation(text: str) -> str:
    """${VAR:-default} / ${VAR-default} -> default; ${VAR} -> empty (as compose would without .env)."""
    def substitute(match: re.Match[str]) -> str:
        body = match.group(1)
        for separator in (":-", "-"):
            if separator in body:
                return body.split(separator, 1)[1]
        return ""
    return re.sub(r"\$\{([^}]*)\}", substitute, text)


def image_problem(image: str) -> str | None:
    """Images must name a tag (or digest) that is not 'latest'."""
    if "@sha256:" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"image '{image}' has no tag (implicitly latest)"
    tag = last.split(":", 1)[1]
    if not tag or tag == "latest":
        return f"image '{image}' uses the latest tag"
    return None


def check_env_for_service(report: FileReport, where: str, service: str, names: Iterable[str],
                          provided: set[str]) -> None:
    values = names if isinstance(names, dict) else None
    names = set(names)
    allowed = COMMON_ENV | SERVICE_ENV.get(service, set())
    for name in sorted(names):
        if name.startswith(CONTRACT_PREFIXES):
            if name not in CONTRACT_ENV:
                report.fail(f"{where}: {name} is not a variable of the runtime contract")
            elif name not in allowed:
                report.fail(f"{where}: {name} does not belong to {service}")
    for name in sorted(REQUIRED_ENV.get(service, set()) - names - provided):
        report.fail(f"{where}: required {name} is not set")
    for name, choices in ENV_CHOICES.items():
        value = values.get(name) if values is not None else None
        if name == KAFKA_SECURITY_PROTOCOL and isinstance(value, str):
            value = value.lower()  # the services accept any case
        if isinstance(value, str) and "$" not in value and value not in choices:
            report.fail(f"{where}: {name}={value} is not one of {'|'.join(sorted(choices))}")


def check_matcher_shards(report: FileReport, gateways: dict[str, Any], matchers: dict[str, Any]) -> None:
    """The gateway merges FACEGATE_MATCHER_SHARDS partial answers per job: it must equal the
    MATCHER_SHARD_COUNT every matcher runs with, and the shard indexes must cover 0..N-1."""
    counts = {where: str(env.get("MATCHER_SHARD_COUNT", "1")) for where, env in matchers.items()}
    indexes = {str(env.get("MATCHER_SHARD_INDEX", "0")) for env in matchers.values()}
    if len(set(counts.values())) > 1:
        report.fail(f"matchers disagree on MATCHER_SHARD_COUNT: {dict(sorted(counts.items()))}")
        return
    if not counts:
        return
    count = next(iter(counts.values()))
    for where, env in gateways.items():
        shards = str(env.get("FACEGATE_MATCHER_SHARDS", "1"))
        if shards != count:
            report.fail(f"{where}: FACEGATE_MATCHER_SHARDS {shards} differs from the matchers' MATCHER_SHARD_COUNT {count}"
                        " (the gateway would wait for the wrong number of partial answers)")
    if count.isdigit() and indexes != {str(i) for i in range(int(count))}:
        report.fail(f"matcher shards {sorted(indexes)} do not cover 0..{int(count) - 1}")


def public_key_list_problems(value: str) -> list[str]:
    """FACEGATE_SERVICE_PUBLIC_KEYS: comma-separated service=base64 entries, each a 32-byte Ed25519
    public key (or the shipped placeholder), naming every service (twice while one is rotated), no
    other name, and no key trusted for two services."""
    problems: list[str] = []
    listed: dict[str, list[str]] = {}
    for entry in value.split(","):
        service, separator, key = (part.strip() for part in entry.partition("="))
        if not separator or not service or not key:
            problems.append(f"entry '{entry.strip()}' is not service=base64-public-key")
            continue
        if service not in SERVICES:
            problems.append(f"entry for '{service}', which is not one of the services {', '.join(SERVICES)}")
            continue
        if key != PUBLIC_KEY_PLACEHOLDER:
            try:
                raw = base64.b64decode(key, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if len(raw) != 32:
                problems.append(f"{service}'s key is not base64 of a 32-byte Ed25519 public key")
                continue
        listed.setdefault(service, []).append(key)
    for service in SERVICES:
        if service not in listed:
            problems.append(f"does not list {service}, which then refuses to start")
    owners: dict[str, set[str]] = {}
    for service, keys in listed.items():
        for key in keys:
            if key != PUBLIC_KEY_PLACEHOLDER:
                owners.setdefault(key, set()).add(service)
    for key, services in sorted(owners.items()):
        if len(services) > 1:
            problems.append(f"one key is listed for {', '.join(sorted(services))}: whoever holds its seed signs as each")
    return problems


def only_readers(readers: Iterable[str]) -> str:
    readers = list(readers)
    return f"only {', '.join(readers)} {'gets' if len(readers) == 1 else 'get'} it"


def key_list_problems(name: str, value: str) -> list[str]:
    """A comma list of public keys (FACEGATE_KIOSK_PUBLIC_KEYS): each base64 of 32 bytes or the shipped
    placeholder, at least one, none twice."""
    problems: list[str] = []
    keys = [key.strip() for key in value.split(",")]
    if not any(keys):
        return [f"{name} lists no key"]
    for key in keys:
        if key == PUBLIC_KEY_PLACEHOLDER:
            continue
        try:
            raw = base64.b64decode(key, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 32:
            problems.append(f"{name} entry '{key}' is not base64 of a 32-byte Ed25519 public key")
    if len([k for k in keys if k != PUBLIC_KEY_PLACEHOLDER]) != len({k for k in keys if k != PUBLIC_KEY_PLACEHOLDER}):
        problems.append(f"{name} lists a key twice")
    return problems


def env_file_problems(key: str, value: str) -> list[str]:
    """A line of a ConfigMap's data or a Kubernetes .env file: never a secret, and public-key lists well formed."""
    if key == SERVICE_KEY:
        return [f"{SERVICE_KEY} is a service's secret seed: it belongs in the Secret"
                " (service-key-<service>), not in a ConfigMap every pod may read"]
    if key in SECRET_ENV:
        return [f"{key} is a secret ({SECRET_WHAT[key]}): it belongs in the Secret facegate-secrets,"
                " not in a ConfigMap every pod may read"]
    if key == SERVICE_PUBLIC_KEYS:
        return [f"{SERVICE_PUBLIC_KEYS} {problem}" for problem in public_key_list_problems(value)]
    if key in KEY_LIST_ENV:
        return key_list_problems(key, value)
    return []


def kafka_security_problems(env: dict[str, Any], mounts: list[str]) -> list[str]:
    """The broker connection settings of one service, as far as they are literal: SASL needs a mechanism,
    a user and a password; TLS files only with TLS, certificate and key together, each inside a
    mounted path (mounts: the container's mount paths, or None when unknown)."""
    problems: list[str] = []
    literal = {k: v for k, v in env.items() if isinstance(v, str) and "$" not in v}
    protocol = literal.get(KAFKA_SECURITY_PROTOCOL, "plaintext" if KAFKA_SECURITY_PROTOCOL not in env else None)
    if protocol is None:
        return problems  # taken from elsewhere: nothing to compare
    protocol = protocol.lower()
    sasl = protocol.startswith("sasl_")
    tls = protocol in ("ssl", "sasl_ssl")
    sasl_set = sorted(n for n in (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD) if n in env)
    if sasl:
        for name in (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD):
            if name not in env:
                problems.append(f"{KAFKA_SECURITY_PROTOCOL}={protocol} needs {name}")
        if protocol == "sasl_plaintext" and literal.get(KAFKA_SASL_MECHANISM) == "PLAIN":
            problems.append(f"{KAFKA_SECURITY_PROTOCOL}=sasl_plaintext with SASL PLAIN sends the password in clear"
                            " text; use sasl_ssl or a SCRAM mechanism")
    elif sasl_set and protocol in KAFKA_PROTOCOLS:
        problems.append(f"{', '.join(sasl_set)} set, but {KAFKA_SECURITY_PROTOCOL} is {protocol}:"
                        " librdkafka would not authenticate (use sasl_ssl or sasl_plaintext)")
    files = [n for n in KAFKA_SSL_FILES if n in env]
    if files and not tls and protocol in KAFKA_PROTOCOLS:
        problems.append(f"{', '.join(files)} set, but {KAFKA_SECURITY_PROTOCOL} is {protocol}: no TLS is spoken")
    if ("FACEGATE_KAFKA_SSL_CERTIFICATE_LOCATION" in env) != ("FACEGATE_KAFKA_SSL_KEY_LOCATION" in env):
        problems.append("FACEGATE_KAFKA_SSL_CERTIFICATE_LOCATION and FACEGATE_KAFKA_SSL_KEY_LOCATION go together"
                        " (a client certificate and its key)")
    if mounts is not None:
        for name in files:
            location = literal.get(name)
            if location is not None and not any(location == m or location.startswith(m.rstrip("/") + "/") for m in mounts):
                problems.append(f"{name}={location} is not inside a mounted volume: the file would not exist")
    return problems


def variables_referenced(text: str) -> list[str]:
    """Names a compose value interpolates: ${NAME...} and $NAME ($$ is a literal dollar)."""
    return re.findall(r"\$\{?([A-Za-z_]\w*)", text.replace("$$", ""))


def interpolations_named(text: str) -> str:
    """${VAR:?message} / ${VAR:-default} -> ${VAR}: the variable, without text that may hold '/' or '@'."""
    return re.sub(r"\$\{([A-Za-z_]\w*)[^}]*\}", r"${\1}", text)


def database_url_login(url: str) -> tuple[str, str] | None:
    """(role, password) of postgres[ql]://role:password@host..., percent-decoded; None when the URL
    names no role."""
    match = re.match(r"^postgres(?:ql)?://([^@/?#]+)@", interpolations_named(url.strip()))
    if not match:
        return None
    user, _, password = match.group(1).partition(":")
    return urllib.parse.unquote(user), urllib.parse.unquote(password)


def check_database_role(report: FileReport, where: str, executable: str, url: str,
                        superusers: set[str], what: str = "FACEGATE_DATABASE_URL") -> None:
    """The URL logs in as the executable's own role: a service never as the schema owner or a
    superuser; the migrations as the owner, never as a superuser."""
    expected = DATABASE_ROLES[executable]
    login = database_url_login(url)
    if login is None:
        report.fail(f"{where}: {what} names no login role (postgres://ROLE:PASSWORD@HOST:PORT/facegate); "
                    f"{executable} logs in as {expected}")
        return
    user = login[0]
    if "$" in user:
        report.fail(f"{where}: {what} takes its role from {user}; write {expected}, {executable}'s own role")
    elif user in superusers:
        report.fail(f"{where}: {what} logs in as the superuser {user}; {executable} logs in as {expected}")
    elif user == SCHEMA_OWNER and executable != "facegate":
        report.fail(f"{where}: {what} logs in as the schema owner {SCHEMA_OWNER}; {executable} logs in as its own role {expected}")
    elif user != expected:
        report.fail(f"{where}: {what} logs in as {user}, not {executable}'s own role {expected}")


# --------------------------------------------------------------------------------------------
# Dockerfile.

@dataclass
class Instruction:
    keyword: str
    arguments: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    instructions: list[Instruction] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        buffer += stripped
        keyword, _, arguments = buffer.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
        buffer = ""
    return instructions


def dockerfile_stages(instructions: list[Instruction]) -> tuple[dict[str, str], list[list[Instruction]]]:
    """Global ARG defaults and the instructions of each stage (stage[0] is its FROM)."""
    global_args: dict[str, str] = {}
    stages: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            stages.append([instruction])
        elif not stages and instruction.keyword == "ARG":
            name, _, default = instruction.arguments.partition("=")
            global_args[name.strip()] = default.strip().strip('"')
        elif stages:
            stages[-1].append(instruction)
    return global_args, stages


class DockerIgnore:
    """The ignore-file rules as BuildKit applies them: last matching pattern wins, '!' re-includes,
    a pattern matching a parent directory matches everything below it."""

    def __init__(self, text: str) -> None:
        self.rules: list[tuple[bool, re.Pattern[str]]] = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            exclude = not line.startswith("!")
            pattern = line.lstrip("!").strip().lstrip("/")
            if pattern.startswith("./"):
                pattern = pattern[2:]
            self.rules.append((exclude, re.compile(self._regex(pattern.rstrip("/")))))

    @staticmethod
    def _regex(pattern: str) -> str:
        out, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out += "(?:.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                out += ".*"
                i += 2
            elif pattern[i] == "*":
                out += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                out += "[^/]"
                i += 1
            else:
                out += re.escape(pattern[i])
                i += 1
        return "^" + out + "$"

    def excluded(self, path: str) -> bool:
        parts = path.strip("/").split("/")
        candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        result = False
        for exclude, regex in self.rules:
            if any(regex.match(candidate) for candidate in candidates):
                result = exclude
        return result


def check_dockerfile(root: Path, reporter: Reporter) -> dict[str, str]:
    """Returns the runtime stage's ENV (image defaults the services inherit)."""
    path = root / ROOT_FILES["dockerfile"]
    report = reporter.file(ROOT_FILES["dockerfile"], "hadolint, non-root USER, HEALTHCHECK, pinned bases, executables, context")
    if not path.exists():
        report.fail("missing")
        return {}
    text = path.read_text()

    if reporter.wants(ROOT_FILES["dockerfile"]):
        hadolint = subprocess.run(
            [tool("hadolint"), "--no-color", "--config", str(root / ROOT_FILES["hadolint"]), str(path)],
            capture_output=True, text=True)
        if hadolint.returncode != 0:
            for line in (hadolint.stdout + hadolint.stderr).strip().splitlines():
                report.fail(f"hadolint: {line.replace(str(path), 'Dockerfile')}")

    instructions = parse_dockerfile(text)
    global_args, stages = dockerfile_stages(instructions)
    if not stages:
        report.fail("no FROM instruction")
        return {}
    stage_names = set()
    for stage in stages:
        words = stage[0].arguments.split()
        words = [w for w in words if not w.startswith("--")]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: global_args.get(m.group(1), m.group(0)), words[0])
        if len(words) >= 3 and words[1].upper() == "AS":
            stage_names.add(words[2])
        if image in stage_names or image == "scratch":
            continue
        if "$" in image:
            report.fail(f"line {stage[0].line}: FROM {words[0]} uses an ARG without a default")
            continue
        problem = image_problem(image)
        if problem:
            report.fail(f"line {stage[0].line}: {problem}")

    final = stages[-1]
    users = [i for i in final if i.keyword == "USER"]
    if not users:
        report.fail("final stage has no USER: the container would run as root")
    else:
        user = users[-1].arguments.split(":")[0].strip()
        if user in ("root", "0", ""):
            report.fail(f"line {users[-1].line}: final USER is root")
    healthchecks = [i for i in final if i.keyword == "HEALTHCHECK"]
    if not healthchecks:
        report.fail("final stage has no HEALTHCHECK")
    elif healthchecks[-1].arguments.strip().upper() == "NONE":
        report.fail(f"line {healthchecks[-1].line}: HEALTHCHECK NONE")
    entrypoints = [i for i in final if i.keyword == "ENTRYPOINT"]
    if not entrypoints or "facegate-entrypoint" not in entrypoints[-1].arguments:
        report.fail("final stage's ENTRYPOINT is not the SERVICE-selecting facegate-entrypoint")

    build_text = " ".join(i.arguments for stage in stages for i in stage if i.keyword == "RUN")
    for executable in EXECUTABLES:
        if not re.search(rf"(?<![\w-]){re.escape(executable)}(?![\w-])", build_text):
            report.fail(f"executable {executable} is never built or checked")
    if "--static-swift-stdlib" not in build_text or "-c release" not in build_text:
        report.fail("the Swift build is not `swift build -c release --static-swift-stdlib`")

    # COPY/ADD sources from the build context must survive the ignore file.
    ignore_path = root / ROOT_FILES["dockerignore"]
    ignore = DockerIgnore(ignore_path.read_text() if ignore_path.exists() else "")
    if not ignore_path.exists():
        report.fail(f"{ROOT_FILES['dockerignore']} is missing")
    for stage in stages:
        for instruction in stage:
            if instruction.keyword not in ("COPY", "ADD"):
                continue
            words = instruction.arguments.split()
            if any(w.startswith("--from") for w in words):
                continue
            sources = [w for w in words if not w.startswith("--")][:-1]
            for source in sources:
                if "://" in source or source == ".":
                    continue
                if not (root / source).exists():
                    report.fail(f"line {instruction.line}: COPY source {source} does not exist")
                elif ignore.excluded(source):
                    report.fail(f"line {instruction.line}: COPY source {source} is excluded by the ignore file")
    package = root / ROOT_FILES["package"]
    if package.exists():
        for target_path in re.findall(r'path:\s*"([^"]+)"', package.read_text()):
            if ignore.excluded(target_path):
                report.fail(f"Package.swift target path {target_path} is excluded from the build context")
        if ignore.excluded("Package.swift"):
            report.fail("Package.swift is excluded from the build context")
    for heavy in (".build", ".git", ".run"):
        if not ignore.excluded(heavy):
            report.fail(f"{heavy} is not excluded from the build context")

    runtime_env: dict[str, str] = {}
    for instruction in final:
        if instruction.keyword == "ENV":
            for key, value in re.findall(r'(\w+)=("[^"]*"|\S+)', instruction.arguments):
                runtime_env[key] = value.strip('"')
    for name in runtime_env:
        if name.startswith(CONTRACT_PREFIXES) and name not in CONTRACT_ENV:
            report.fail(f"ENV {name} is not a variable of the runtime contract")
    if runtime_env.get("FACEGATE_ADMIN_HOST") != "0.0.0.0":
        report.fail("runtime ENV must set FACEGATE_ADMIN_HOST=0.0.0.0 (probes reach the pod IP)")
    return runtime_env


# --------------------------------------------------------------------------------------------
# Scripts.

def check_bash_syntax(report: FileReport, path: Path) -> bool:
    if not path.exists():
        report.fail("missing")
        return False
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        report.fail(f"bash syntax: {result.stderr.strip()}")
        return False
    if not os.access(path, os.X_OK):
        report.fail("not executable")
    return True


def parse_topic_table(text: str) -> dict[str, tuple[int, dict[str, str]]]:
    match = re.search(r'^topics="\n(.*?)^"', text, re.S | re.M)
    if not match:
        return {}
    table: dict[str, tuple[int, dict[str, str]]] = {}
    for line in match.group(1).splitlines():
        words = line.split()
        if not words:
            continue
        name, partitions = words[0], int(words[1])
        configs: dict[str, str] = {}
        if len(words) > 2 and words[2] != "-":
            for item in words[2].split(","):
                key, _, value = item.partition("=")
                configs[key] = value
        table[name] = (partitions, configs)
    return table


def check_scripts(root: Path, reporter: Reporter) -> dict[str, tuple[int, dict[str, str]]]:
    report = reporter.file(ROOT_FILES["entrypoint"], "bash syntax, SERVICE choices = executables")
    path = root / ROOT_FILES["entrypoint"]
    if check_bash_syntax(report, path):
        case = re.search(r"^\s*([\w|-]+)\)\s*;;", path.read_text(), re.M)
        choices = case.group(1).split("|") if case else []
        if sorted(choices) != sorted(EXECUTABLES):
            report.fail(f"SERVICE choices {choices} differ from the executables {EXECUTABLES}")

    report = reporter.file(ROOT_FILES["healthcheck"], "bash syntax, admin ports = contract")
    path = root / ROOT_FILES["healthcheck"]
    if check_bash_syntax(report, path):
        ports = {name: int(port) for name, port in
                 re.findall(r"^\s*([\w-]+)\)\s*default_port=(\d+)", path.read_text(), re.M)}
        if ports != ADMIN_PORTS:
            report.fail(f"admin ports {ports} differ from the contract {ADMIN_PORTS}")
        if "/healthz" not in path.read_text():
            report.fail("does not ask /healthz")

    report = reporter.file(ROOT_FILES["topics"], "bash syntax, topics and partitions = contract")
    path = root / ROOT_FILES["topics"]
    table: dict[str, tuple[int, dict[str, str]]] = {}
    if check_bash_syntax(report, path):
        table = parse_topic_table(path.read_text())
        if not table:
            report.fail("no topic table (topics=\"...\") found")
        for name, (partitions, configs) in TOPICS.items():
            if name not in table:
                report.fail(f"topic {name} is missing")
                continue
            if table[name][0] != partitions:
                report.fail(f"topic {name} has {table[name][0]} partitions, the contract says {partitions}")
            for key, value in configs.items():
                if table[name][1].get(key) != value:
                    report.fail(f"topic {name} lacks {key}={value}")
        for name in sorted(set(table) - set(TOPICS)):
            report.fail(f"topic {name} is not in the contract")
        for name in sorted(SHORT_RETENTION_TOPICS & set(table)):
            check_short_retention(report, name, table[name][1])
    return table


def check_short_retention(report: FileReport, name: str, configs: dict[str, str]) -> None:
    """A topic carrying images or personal data keeps records minutes: retention.ms at most an hour,
    in segments no longer than that (the broker deletes closed segments only)."""
    retention, segment = configs.get("retention.ms"), configs.get("segment.ms")
    if retention is None:
        report.fail(f"topic {name} carries images or personal data but sets no retention.ms"
                    " (the broker would keep it for its default, days)")
        return
    if not retention.isdigit() or not 0 < int(retention) <= MAX_SHORT_RETENTION_MS:
        report.fail(f"topic {name}: retention.ms={retention} is not within 1..{MAX_SHORT_RETENTION_MS} (an hour)")
        return
    if segment is None or not segment.isdigit() or int(segment) > int(retention):
        report.fail(f"topic {name}: segment.ms={segment} must be set and at most retention.ms={retention}"
                    " (records expire with their segment, which rolls after segment.ms)")


# --------------------------------------------------------------------------------------------
# docker-compose.yml.

@functools.lru_cache(maxsize=None)
def compose_schema() -> dict[str, Any]:
    # The file check-jsonschema ships, found without importing that package (its command-line
    # machinery is of no use here and slow to import).
    import importlib.util
    spec = importlib.util.find_spec("check_jsonschema")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("validate-deploy: check-jsonschema is not installed (run scripts/validate-deploy.sh)")
    schema_file = Path(next(iter(spec.submodule_search_locations))) / "builtin_schemas/vendor/compose-spec.json"
    return json.loads(schema_file.read_text())


# Validators by schema (held, so an id is never reused) and the errors found per (schema, document):
# documents are keyed by their repr, which tells apart every value YAML can load (order included).
# A run checks many equal objects (each layout rendered twice, the manifests again in the layouts),
# the self-tests many copies of the same files.
_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}
_SCHEMA_ERRORS: dict[tuple[int, str], tuple[str, ...]] = {}


def schema_errors(schema: dict[str, Any], document: Any) -> list[str]:
    key = (id(schema), repr(document))
    if key not in _SCHEMA_ERRORS:
        if id(schema) not in _VALIDATORS:
            validator_class = jsonschema.validators.validator_for(schema)
            _VALIDATORS[id(schema)] = (schema, validator_class(schema, format_checker=validator_class.FORMAT_CHECKER))
        validator = _VALIDATORS[id(schema)][1]
        errors = []
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
            location = "/".join(str(p) for p in error.absolute_path) or "(root)"
            errors.append(f"schema: {location}: {error.message}")
        _SCHEMA_ERRORS[key] = tuple(errors)
    return list(_SCHEMA_ERRORS[key])


def check_compose(root: Path, reporter: Reporter, image_env: dict[str, str],
                  topics: dict[str, tuple[int, dict[str, str]]]) -> None:
    if not (reporter.wants(ROOT_FILES["compose"]) or reporter.wants(ROOT_FILES["compose_env"])):
        return  # nothing else depends on these two
    report = reporter.file(ROOT_FILES["compose"], "Compose Specification schema, runtime contract, dependencies")
    path = root / ROOT_FILES["compose"]
    if not path.exists():
        report.fail("missing")
        return
    try:
        documents = load_yaml_documents(path)
    except yaml.YAMLError as error:
        report.fail(f"YAML: {error}")
        return
    if len(documents) != 1 or not isinstance(documents[0], dict):
        report.fail("expected one YAML mapping")
        return
    compose = documents[0]
    for problem in schema_errors(compose_schema(), compose):
        report.fail(problem)
    try:
        check_compose_contract(root, path, report, compose, image_env, topics)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as error:
        report.fail(f"contract checks could not read the file: {type(error).__name__}: {error}")
    check_compose_env_example(root, path, reporter)


def check_compose_database_roles(report: FileReport, services: dict[str, Any]) -> None:
    """Every FaceGate container logs in as its own role with its own password; none gets the
    superuser's password; a one-shot gives the service roles the passwords of those URLs."""
    superusers = set(SUPERUSERS)
    for name, service in services.items():
        if not isinstance(service, dict) or "entrypoint" in service or "command" in service:
            continue
        if str(service.get("image", "")).rsplit("/", 1)[-1].startswith("postgres:"):
            superuser = str(env_names(service.get("environment")).get("POSTGRES_USER", "postgres"))
            superusers.add(superuser)
            if superuser == SCHEMA_OWNER or superuser in SERVICE_ROLES.values():
                report.fail(f"services.{name}: POSTGRES_USER {superuser} makes a FaceGate role the cluster's superuser")

    urls: dict[str, set[str]] = {}
    password_roles: dict[str, set[str]] = {}
    setters: list[str] = []
    for name, service in services.items():
        if not isinstance(service, dict):
            continue
        where = f"services.{name}"
        environment = env_names(service.get("environment"))
        mounts = [str(v if isinstance(v, str) else (v or {}).get("source", "")) for v in service.get("volumes") or []]
        if any(ROLE_PASSWORD_SCRIPT in m for m in mounts):
            setters.append(name)
        selected = environment.get("SERVICE")
        if selected not in DATABASE_ROLES:
            continue
        for key, value in environment.items():
            if "${POSTGRES_PASSWORD" in str(value):
                report.fail(f"{where}: {key} carries the superuser's password POSTGRES_PASSWORD")
        url = environment.get("FACEGATE_DATABASE_URL")
        if url is None:
            continue  # reported as a required variable
        url = interpolations_named(str(url))
        check_database_role(report, where, selected, url, superusers)
        role = DATABASE_ROLES[selected]
        urls.setdefault(role, set()).add(url)
        login = database_url_login(url)
        variable = re.fullmatch(r"\$\{(\w+)\}", login[1]) if login else None
        if variable is None:
            report.fail(f"{where}: the password in FACEGATE_DATABASE_URL is not a variable from .env (${{NAME}})")
        else:
            password_roles.setdefault(variable.group(1), set()).add(role)
    for variable, roles in sorted(password_roles.items()):
        if variable == "POSTGRES_PASSWORD":
            report.fail(f"{', '.join(sorted(roles))} log in with the superuser's password POSTGRES_PASSWORD")
        elif len(roles) > 1:
            report.fail(f"the roles {', '.join(sorted(roles))} share the password {variable}: each role has its own")
    if not setters:
        report.fail(f"no one-shot runs {ROLE_PASSWORD_SCRIPT}: the services' login roles would have no password")
    for name in setters:
        environment = env_names(services[name].get("environment"))
        for executable, variable in ROLE_PASSWORD_ENV.items():
            role = DATABASE_ROLES[executable]
            value = environment.get(variable)
            if value is None:
                report.fail(f"services.{name}: {variable} ({role}'s URL) is not set")
                continue
            check_database_role(report, f"services.{name}", executable, interpolations_named(str(value)), superusers, variable)
            if role in urls and interpolations_named(str(value)) not in urls[role]:
                report.fail(f"services.{name}: {variable} is not the URL {role} logs in with")


def check_compose_service_keys(report: FileReport, services: dict[str, Any]) -> None:
    """Each service's FACEGATE_SERVICE_KEY is its own .env variable (FACEGATE_SERVICE_KEY_<SERVICE>);
    no container is handed another service's seed (under any name), the migrate one-shot and the
    other containers none; the four services get one and the same FACEGATE_SERVICE_PUBLIC_KEYS."""
    seed_owners = {variable: service for service, variable in SERVICE_KEY_VARIABLES.items()}
    public_lists: dict[str, str] = {}
    for name, service in services.items():
        if not isinstance(service, dict):
            continue
        where = f"services.{name}"
        environment = env_names(service.get("environment"))
        selected = environment.get("SERVICE")
        if service.get("env_file") is not None:
            report.fail(f"{where}: env_file hands every variable of the file (every service's message-signing key,"
                        " every password) to the container; pass each variable by name")
        for key, value in environment.items():
            for variable in variables_referenced(str(value)):
                owner = seed_owners.get(variable)
                if owner is None and variable.startswith(f"{SERVICE_KEY}_"):
                    report.fail(f"{where}: {key} interpolates {variable}, which names no service's message-signing key"
                                f" ({', '.join(sorted(seed_owners))})")
                elif owner is not None and owner != selected:
                    report.fail(f"{where}: {key} carries {variable}, {owner}'s message-signing key; only {owner} gets it")
                elif owner is not None and key != SERVICE_KEY:
                    report.fail(f"{where}: {selected}'s message-signing key {variable} is passed as {key},"
                                f" not as {SERVICE_KEY}")
        if selected not in SERVICES:
            if selected is None and SERVICE_KEY in environment:
                report.fail(f"{where}: {SERVICE_KEY} is given to a container that runs no FaceGate service")
            continue
        own = SERVICE_KEY_VARIABLES[selected]
        value = environment.get(SERVICE_KEY)
        if value is not None and variables_referenced(str(value)) != [own]:
            source = "a value written into the compose file" if "$" not in str(value) else str(value)
            report.fail(f"{where}: {SERVICE_KEY} comes from {source}, not from {selected}'s own ${{{own}}} in .env")
        value = environment.get(SERVICE_PUBLIC_KEYS)
        if value is None:
            continue  # reported as a required variable
        public_lists[where] = interpolations_named(str(value))
        if "$" not in str(value):
            for problem in public_key_list_problems(str(value)):
                report.fail(f"{where}: {SERVICE_PUBLIC_KEYS} {problem}")
    if len(set(public_lists.values())) > 1:
        report.fail(f"the services are given different {SERVICE_PUBLIC_KEYS}: {dict(sorted(public_lists.items()))};"
                    " a service missing from another's list has its messages refused")


def check_compose_secrets(report: FileReport, services: dict[str, Any]) -> None:
    """Secrets come from .env, each only to the services that read it and only under its own
    name; the audit writers share one audit key; each service has its own Kafka password variable;
    the broker settings of every service are coherent."""
    password_owners = {variable: service for service, variable in KAFKA_PASSWORD_VARIABLES.items()}
    audit_sources: dict[str, dict[str, str]] = {AUDIT_KEY: {}, PREVIOUS_AUDIT_KEYS: {}}
    for name, service in services.items():
        if not isinstance(service, dict):
            continue
        where = f"services.{name}"
        environment = env_names(service.get("environment"))
        selected = environment.get("SERVICE")
        selected = selected if isinstance(selected, str) else None
        runs = selected or "no FaceGate service"
        for key, value in environment.items():
            for variable in variables_referenced(str(value)):
                if variable in SECRET_ENV:
                    readers = SECRET_READERS[variable]
                    if selected not in readers:
                        report.fail(f"{where}: {key} carries ${{{variable}}}, {SECRET_WHAT[variable]}; it runs {runs},"
                                    f" and {only_readers(readers)}")
                    elif key != variable:
                        report.fail(f"{where}: {key} carries ${{{variable}}}, {SECRET_WHAT[variable]}; .env's"
                                    f" {variable} is passed only as {variable}")
                owner = password_owners.get(variable)
                if owner is not None and owner != selected:
                    report.fail(f"{where}: {key} carries {variable}, {owner}'s Kafka SASL password; only {owner} gets it")
        if selected not in EXECUTABLES:
            continue
        for key in sorted(SECRET_ENV & set(environment)):
            value = str(environment[key])
            if not re.fullmatch(r"\$\{\w+[^}]*\}", value.strip()):
                report.fail(f"{where}: {key} ({SECRET_WHAT[key]}) is written into the compose file; take it from"
                            f" .env as ${{NAME}}")
        password = environment.get(KAFKA_SASL_PASSWORD)
        if password is not None and selected in SERVICES:
            named = variables_referenced(str(password))
            if named and named[0].startswith(f"{KAFKA_SASL_PASSWORD}_") and named[0] != KAFKA_PASSWORD_VARIABLES[selected]:
                if named[0] not in password_owners:
                    report.fail(f"{where}: {KAFKA_SASL_PASSWORD} comes from {named[0]}, which names no service"
                                f" ({', '.join(sorted(password_owners))})")
        for key in KEY_LIST_ENV & set(environment):
            value = str(environment[key])
            if "$" not in value:
                for problem in key_list_problems(key, value):
                    report.fail(f"{where}: {problem}")
        if selected in AUDIT_WRITERS:
            for key in audit_sources:
                if key in environment:
                    audit_sources[key][where] = interpolations_named(str(environment[key]))
        if selected in SERVICES:
            targets = []
            for volume in service.get("volumes") or []:
                if isinstance(volume, str):
                    parts = volume.split(":")
                    targets.append(parts[1] if len(parts) > 1 else parts[0])
                elif isinstance(volume, dict) and volume.get("target"):
                    targets.append(str(volume["target"]))
            for problem in kafka_security_problems(environment, targets):
                report.fail(f"{where}: {problem}")
    check_audit_sources(report, audit_sources, {f"services.{n}" for n, s in services.items() if isinstance(s, dict)
                                                and env_names(s.get("environment")).get("SERVICE") in AUDIT_WRITERS})


def check_audit_sources(report: FileReport, sources: dict[str, dict[str, str]], writers: set[str]) -> None:
    """The three audit writers append to the same chains: one FACEGATE_AUDIT_KEY for all, and
    FACEGATE_PREVIOUS_AUDIT_KEYS on all three from one source, or on none."""
    current = sources[AUDIT_KEY]
    if len(set(current.values())) > 1:
        report.fail(f"the audit writers are given different {AUDIT_KEY}: {dict(sorted(current.items()))};"
                    " they append to the same chains, which one key must verify")
    previous = sources[PREVIOUS_AUDIT_KEYS]
    if previous and (len(set(previous.values())) > 1 or set(previous) != writers):
        missing = sorted(writers - set(previous))
        report.fail(f"{PREVIOUS_AUDIT_KEYS} differs between the audit writers ({dict(sorted(previous.items()))}"
                    + (f"; missing on {', '.join(missing)}" if missing else "") + "): set it on all three alike")


def check_compose_contract(root: Path, path: Path, report: FileReport, compose: dict[str, Any],
                           image_env: dict[str, str], topics: dict[str, tuple[int, dict[str, str]]]) -> None:

    services: dict[str, Any] = compose.get("services") or {}
    seen_services: set[str] = set()
    # One-shots: run to completion before the services start (migrations, role passwords, topics).
    one_shots = {n for n, s in services.items() if isinstance(s, dict) and str(s.get("restart", "")) == "no"}
    migrations = {n for n, s in services.items() if isinstance(s, dict)
                  and env_names(s.get("environment")).get("SERVICE") == "facegate"}
    password_setters = {n for n, s in services.items() if isinstance(s, dict)
                        and any(ROLE_PASSWORD_SCRIPT in str(v) for v in s.get("volumes") or [])}
    gateways: dict[str, dict[str, str]] = {}
    matchers: dict[str, dict[str, str]] = {}
    for name, service in services.items():
        if not isinstance(service, dict):
            continue
        image = resolve_default_interpolation(str(service.get("image", "")))
        if image:
            problem = image_problem(image)
            if problem:
                report.fail(f"services.{name}: {problem}")
        depends = service.get("depends_on") or {}
        for dependency in (depends if isinstance(depends, (list, dict)) else []):
            if dependency not in services:
                report.fail(f"services.{name}: depends on unknown service {dependency}")
        environment = env_names(service.get("environment"))
        selected = environment.get("SERVICE")
        if selected is None:
            continue
        if selected not in EXECUTABLES:
            report.fail(f"services.{name}: SERVICE={selected} is not an executable")
            continue
        seen_services.add(selected)
        where = f"services.{name}"
        check_env_for_service(report, where, selected, environment, set(image_env))
        resolved = {k: resolve_default_interpolation(str(v)) for k, v in environment.items()}
        if selected == "auth-gateway":
            gateways[where] = resolved
        elif selected == "matcher-worker":
            matchers[where] = resolved
        if selected in ADMIN_PORTS:
            port = str(environment.get("FACEGATE_ADMIN_PORT", ADMIN_PORTS[selected]))
            if port != str(ADMIN_PORTS[selected]):
                report.fail(f"{where}: FACEGATE_ADMIN_PORT {port} is not the contract's {ADMIN_PORTS[selected]}")
            healthcheck = service.get("healthcheck") or {}
            if healthcheck.get("disable"):
                report.fail(f"{where}: healthcheck disabled for a long-running service")
            for dependency, condition in (depends.items() if isinstance(depends, dict) else []):
                wanted = "service_completed_successfully" if dependency in one_shots else None
                if wanted and (condition or {}).get("condition") != wanted:
                    report.fail(f"{where}: depends_on {dependency} must wait for {wanted}")
            for dependency in sorted(migrations):
                if dependency not in depends:
                    report.fail(f"{where}: does not wait for the migrations (depends_on {dependency})")
            for dependency in sorted(password_setters):
                if dependency not in depends:
                    report.fail(f"{where}: does not wait for its role's password (depends_on {dependency})")
        if selected == "auth-gateway":
            published = [str(p) for p in service.get("ports", [])]
            if not any(p.endswith(f":{HTTP_PORT}") for p in published):
                report.fail(f"{where}: HTTP port {HTTP_PORT} is not published")
        if selected == "matcher-worker":
            replicas = (service.get("deploy") or {}).get("replicas", 1)
            partitions = topics.get(MATCHER_TOPIC, (TOPICS[MATCHER_TOPIC][0], {}))[0]
            if not (2 <= int(replicas) <= partitions):
                report.fail(f"{where}: deploy.replicas {replicas} not within 2..{partitions} ({MATCHER_TOPIC} partitions)")
        if selected == "facegate":
            command = service.get("command")
            if command not in (["migrate"], "migrate"):
                report.fail(f"{where}: the one-shot CLI service must run `migrate`")
    for missing in sorted(set(EXECUTABLES) - seen_services):
        report.fail(f"no service runs {missing}")
    check_matcher_shards(report, gateways, matchers)
    check_compose_database_roles(report, services)
    check_compose_service_keys(report, services)
    check_compose_secrets(report, services)

    # Paths are relative to the compose file's folder: mounted files and the build context
    # (the repository root, which the Dockerfile and its ignore file expect).
    for name, service in services.items():
        for volume in (service or {}).get("volumes", []) if isinstance(service, dict) else []:
            source = volume.split(":", 1)[0] if isinstance(volume, str) else (volume or {}).get("source", "")
            if source.startswith(("./", "../")) and not (path.parent / source).exists():
                report.fail(f"services.{name}: mounted file {source} does not exist")
        build = (service or {}).get("build") if isinstance(service, dict) else None
        if isinstance(build, dict):
            context = (path.parent / str(build.get("context", "."))).resolve()
            if context != root.resolve():
                report.fail(f"services.{name}: build context {build.get('context')} is not the repository root")
            elif not (context / str(build.get("dockerfile", "Dockerfile"))).exists():
                report.fail(f"services.{name}: dockerfile {build.get('dockerfile')} does not exist in the build context")


def uncommented(text: str) -> str:
    """The YAML text without its comment lines (a commented example requires no variable)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def check_compose_env_example(root: Path, path: Path, reporter: Reporter) -> None:
    required_vars: set[str] = set(re.findall(r"\$\{(\w+):\?", uncommented(path.read_text())))
    example = root / ROOT_FILES["compose_env"]
    report = reporter.file(ROOT_FILES["compose_env"], "keys known, every required compose variable present")
    if not example.exists():
        report.fail("missing")
        return
    keys = set()
    for line in example.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key = line.split("=", 1)[0].strip()
            keys.add(key)
    interpolated = set(re.findall(r"\$\{(\w+)", uncommented(path.read_text())))
    for key in sorted(keys - interpolated):
        report.fail(f"{key} is not used by {ROOT_FILES['compose']}")
    for key in sorted(required_vars - keys):
        report.fail(f"{key} is required by {ROOT_FILES['compose']} but missing here")


# --------------------------------------------------------------------------------------------
# Kubernetes.

# Custom resources (KEDA, the prometheus-operator) are checked against this repository's schemas, by kind.
CRD_SCHEMAS = {"ScaledObject": "keda_schema", "TriggerAuthentication": "keda_auth_schema",
               "PrometheusRule": "prometheus_rule_schema", "PodMonitor": "pod_monitor_schema"}


def kubernetes_errors(document: dict[str, Any], crd_schemas: dict[str, dict[str, Any]]) -> list[str]:
    if not isinstance(document, dict) or "kind" not in document or "apiVersion" not in document:
        return ["not a Kubernetes object (no kind/apiVersion)"]
    name = f"{document['kind']}/{(document.get('metadata') or {}).get('name', '?')}"
    if document["kind"] in CRD_SCHEMAS:
        schema = crd_schemas.get(document["kind"])
        if not schema:
            return [f"{name}: not checked, the schema {ROOT_FILES[CRD_SCHEMAS[document['kind']]]} is unusable"]
        return [f"{name}: {e}" for e in schema_errors(schema, document)]
    return list(_kubernetes_schema_errors(name, repr(document), document))


_KUBERNETES_ERRORS: dict[str, tuple[str, ...]] = {}


def _kubernetes_schema_errors(name: str, key: str, document: dict[str, Any]) -> tuple[str, ...]:
    """Memoized by the document's repr (see schema_errors)."""
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError, latest_version, validate

    if key in _KUBERNETES_ERRORS:
        return _KUBERNETES_ERRORS[key]
    errors = []
    for version in KUBERNETES_VERSIONS:
        version = version or latest_version()
        try:
            validate(document, version, strict=True)
        except ValidationError as error:
            location = "/".join(str(p) for p in error.absolute_path) or "(root)"
            errors.append(f"{name}: Kubernetes {version}: {location}: {error.message}")
        except SchemaNotFoundError as error:
            errors.append(f"{name}: {error.message}")
    _KUBERNETES_ERRORS[key] = tuple(errors)
    return _KUBERNETES_ERRORS[key]


def container_env(container: dict[str, Any], config_maps: dict[str, dict[str, str]]) -> tuple[dict[str, Any], list[str]]:
    env: dict[str, Any] = {}
    unknown_refs: list[str] = []
    for source in container.get("envFrom", []) or []:
        ref = (source.get("configMapRef") or {}).get("name")
        if ref is not None:
            if ref in config_maps:
                env.update({k: v for k, v in config_maps[ref].items()})
            else:
                unknown_refs.append(f"envFrom ConfigMap {ref} is not part of the layout")
        if source.get("secretRef"):
            unknown_refs.append("envFrom secretRef hands every secret to the container; map keys one by one")
    for variable in container.get("env", []) or []:
        env[variable["name"]] = variable.get("value", variable.get("valueFrom"))
    return env, unknown_refs


def pod_labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def secret_source(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "nowhere"
    if "value" in entry:
        return "a value written into the manifest"
    ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
    if ref:
        return f"Secret {ref.get('name')} key {ref.get('key')}"
    return "a ConfigMap or field reference"


def check_database_secret(report: FileReport, where: str, executable: str, container: dict[str, Any],
                          env: dict[str, Any]) -> None:
    """FACEGATE_DATABASE_URL comes from the Secret key of the executable's own role, required."""
    key, role = DATABASE_URL_KEYS[executable], DATABASE_ROLES[executable]
    entry = next((v for v in container.get("env") or [] if v.get("name") == "FACEGATE_DATABASE_URL"), None)
    if entry is None and "FACEGATE_DATABASE_URL" not in env:
        return  # reported as a required variable
    if entry is not None and "value" in entry:
        check_database_role(report, where, executable, str(entry["value"]), SUPERUSERS)
    ref = ((entry or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
    if ref.get("name") != "facegate-secrets" or ref.get("key") != key:
        report.fail(f"{where}: FACEGATE_DATABASE_URL comes from {secret_source(entry)}, not Secret facegate-secrets"
                    f" key {key} ({executable}'s own role {role})")
    elif ref.get("optional"):
        report.fail(f"{where}: FACEGATE_DATABASE_URL is optional; the {key} key must exist")


def check_container_service_keys(report: FileReport, where: str, selected: str | None, container: dict[str, Any],
                                 env: dict[str, Any], config_maps: dict[str, dict[str, str]],
                                 public_lists: dict[str, str]) -> None:
    """A service's FACEGATE_SERVICE_KEY comes from its own Secret key (service-key-<service>), required;
    no container reads another service's key (the migrate Job and the other containers none);
    FACEGATE_SERVICE_PUBLIC_KEYS is resolved, where it can be, into public_lists for comparison."""
    for variable in container.get("env") or []:
        ref = (variable.get("valueFrom") or {}).get("secretKeyRef") or {}
        owner, what = OWNED_SECRET_KEYS.get(ref.get("key"), (None, "")) if ref.get("name") == "facegate-secrets" else (None, "")
        if owner is not None and owner != selected:
            runs = selected or "no FaceGate service"
            report.fail(f"{where}: reads secret key {ref.get('key')}, {owner}'s {what}, as {variable.get('name')};"
                        f" it runs {runs}, and only {owner}'s pods get that key")
    if selected not in SERVICES:
        if selected is None and SERVICE_KEY in env:
            report.fail(f"{where}: {SERVICE_KEY} is given to a container that runs no FaceGate service")
        return
    key = SERVICE_KEY_SECRET_KEYS[selected]
    entry = next((v for v in container.get("env") or [] if v.get("name") == SERVICE_KEY), None)
    if entry is not None or SERVICE_KEY in env:
        ref = ((entry or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
        if ref.get("name") != "facegate-secrets" or ref.get("key") != key:
            report.fail(f"{where}: {SERVICE_KEY} comes from {secret_source(entry)}, not Secret facegate-secrets"
                        f" key {key} ({selected}'s own message-signing key)")
        elif ref.get("optional"):
            report.fail(f"{where}: {SERVICE_KEY} is optional; the {key} key must exist")
    value = env.get(SERVICE_PUBLIC_KEYS)
    if isinstance(value, str):
        # Written into the manifest (or an envFrom ConfigMap, whose data is checked on its own).
        public_lists[where] = value
        if not any(v.get("name") == SERVICE_PUBLIC_KEYS and "value" in v for v in container.get("env") or []):
            return
        for problem in public_key_list_problems(value):
            report.fail(f"{where}: {SERVICE_PUBLIC_KEYS} {problem}")
    elif isinstance(value, dict) and value.get("configMapKeyRef"):
        ref = value["configMapKeyRef"]
        if ref.get("optional"):
            report.fail(f"{where}: {SERVICE_PUBLIC_KEYS} is optional; without it {selected} refuses to start")
        resolved = config_maps.get(ref.get("name"), {}).get(ref.get("key"))
        if resolved is None:
            report.fail(f"{where}: {SERVICE_PUBLIC_KEYS} comes from key {ref.get('key')} of ConfigMap {ref.get('name')},"
                        " which the layout does not have")
        else:
            public_lists[where] = resolved  # its problems are reported with the ConfigMap


def check_container_secrets(report: FileReport, where: str, selected: str | None, container: dict[str, Any],
                            env: dict[str, Any], secret_variables: dict[str, str]) -> None:
    """Every secret variable comes from a Secret (secretKeyRef), required ones not optional; no container
    reads a secret key documented for a variable its service does not read, under any name."""
    entries = {v.get("name"): v for v in container.get("env") or []}
    runs = selected or "no FaceGate service"
    for variable in container.get("env") or []:
        ref = (variable.get("valueFrom") or {}).get("secretKeyRef") or {}
        documented = secret_variables.get(ref.get("key")) if ref.get("name") == "facegate-secrets" else None
        if documented in SECRET_READERS and ref.get("key") not in OWNED_SECRET_KEYS and selected not in SECRET_READERS[documented]:
            report.fail(f"{where}: reads secret key {ref.get('key')} ({documented}, {SECRET_WHAT.get(documented, 'a secret')})"
                        f" as {variable.get('name')}; it runs {runs}, and {only_readers(SECRET_READERS[documented])}")
    if selected not in EXECUTABLES:
        return
    for name in sorted(SECRET_ENV & set(env)):
        entry = entries.get(name)
        ref = ((entry or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
        if not ref:
            report.fail(f"{where}: {name} ({SECRET_WHAT[name]}) comes from {secret_source(entry) if entry else 'a ConfigMap (envFrom)'};"
                        " a secret is read from a Secret (secretKeyRef), never written into a manifest or a ConfigMap")
        elif ref.get("optional") and name in REQUIRED_ENV.get(selected, set()):
            report.fail(f"{where}: {name} is optional; {selected} refuses to start without it, so the {ref.get('key')} key must exist")
    for name in sorted(KEY_LIST_ENV & set(env)):
        value = env[name]
        if isinstance(value, str) and name in entries and "value" in entries[name]:
            for problem in key_list_problems(name, value):
                report.fail(f"{where}: {problem}")
        elif isinstance(value, dict) and value.get("secretKeyRef") is None and value.get("configMapKeyRef", {}).get("optional"):
            report.fail(f"{where}: {name} is optional; without it the gateway refuses every kiosk identity token")


def check_secret_volumes(report: FileReport, kind: str, name: str, pod: dict[str, Any],
                         config_maps: dict[str, dict[str, str]], secret_variables: dict[str, str] | None = None) -> None:
    """A volume of the Secret facegate-secrets puts its keys into the pod as files: it must list its
    items, and those only keys of the service the pod runs (its own message-signing key or Kafka
    password) or keys documented for a variable that service reads."""
    runs = {container_env(c, config_maps)[0].get("SERVICE")
            for c in (pod.get("initContainers") or []) + pod.get("containers", [])} - {None}
    key_owners = {key: service for key, (service, _) in OWNED_SECRET_KEYS.items()}
    for volume in pod.get("volumes") or []:
        sources = [volume["secret"]] if volume.get("secret") else [
            s["secret"] for s in (volume.get("projected") or {}).get("sources") or [] if s.get("secret")]
        for source in sources:
            if source.get("secretName", source.get("name")) != "facegate-secrets":
                continue
            items = source.get("items")
            if not items:
                report.fail(f"{kind}/{name}: volume {volume.get('name')} mounts all of facegate-secrets, every"
                            " service's message-signing key included; map keys one by one")
                continue
            for item in items:
                owner = key_owners.get(item.get("key"))
                documented = (secret_variables or {}).get(item.get("key"))
                if owner is not None and runs != {owner}:
                    report.fail(f"{kind}/{name}: volume {volume.get('name')} mounts {item.get('key')}, {owner}'s"
                                f" {OWNED_SECRET_KEYS[item.get('key')][1]}, into a pod running {', '.join(sorted(runs)) or 'no FaceGate service'}")
                elif owner is None and documented in SECRET_READERS and (not runs or not runs <= set(SECRET_READERS[documented])):
                    report.fail(f"{kind}/{name}: volume {volume.get('name')} mounts {item.get('key')} ({documented}) into a pod"
                                f" running {', '.join(sorted(runs)) or 'no FaceGate service'};"
                                f" {only_readers(SECRET_READERS[documented])}")


def check_role_password_container(report: FileReport, where: str, container: dict[str, Any]) -> None:
    """set-role-passwords.sh reads each role's URL from the same Secret key the role's workload uses."""
    entries = {v.get("name"): v for v in container.get("env") or []}
    for executable, variable in ROLE_PASSWORD_ENV.items():
        key = DATABASE_URL_KEYS[executable]
        ref = ((entries.get(variable) or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
        if ref.get("name") != "facegate-secrets" or ref.get("key") != key:
            report.fail(f"{where}: {variable} comes from {secret_source(entries.get(variable))}, not Secret"
                        f" facegate-secrets key {key} (the URL {DATABASE_ROLES[executable]} logs in with)")


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions) against a pod's labels."""
    if not pod_labels_match(selector.get("matchLabels") or {}, labels):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def check_network_policies(report: FileReport, by_kind: dict[str, list[dict[str, Any]]],
                           config_maps: dict[str, dict[str, str]]) -> None:
    """Default deny both ways; ingress only to the gateway's HTTP port and to admin ports (from a named source;
    check_public_entrance holds the HTTP port to one); egress to what each workload uses."""
    policies = by_kind.get("NetworkPolicy", [])
    if not policies:
        report.fail("no NetworkPolicy: every pod may reach, and be reached from, anything")
        return
    if not any(not (p["spec"].get("podSelector") or {}) and {"Ingress", "Egress"} <= set(p["spec"].get("policyTypes") or [])
               and not p["spec"].get("ingress") and not p["spec"].get("egress") for p in policies):
        report.fail("no default-deny NetworkPolicy (podSelector {}, policyTypes Ingress and Egress, no rules)")
    for workload in by_kind.get("Deployment", []) + by_kind.get("Job", []):
        kind, name = workload["kind"], workload["metadata"]["name"]
        pod = workload["spec"]["template"]
        containers = (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]
        executables = {container_env(c, config_maps)[0].get("SERVICE") for c in containers} - {None}
        named_ports = {p.get("name"): p.get("containerPort") for c in containers for p in c.get("ports") or []}
        public = {HTTP_PORT} if "auth-gateway" in executables else set()
        admin = {ADMIN_PORTS[e] for e in executables if e in ADMIN_PORTS}
        selecting = [p for p in policies if selector_matches(p["spec"].get("podSelector") or {}, pod["metadata"].get("labels") or {})]
        egress_ports: set[Any] = set()
        for policy in selecting:
            where = f"NetworkPolicy/{policy['metadata']['name']}"
            for rule in policy["spec"].get("ingress") or []:
                if not rule.get("ports"):
                    report.fail(f"{where}: admits {kind}/{name} on every port")
                for port in rule.get("ports") or []:
                    number = named_ports.get(port.get("port"), port.get("port"))
                    if number in admin and not rule.get("from"):
                        report.fail(f"{where}: admits the admin port of {kind}/{name} from anywhere (only monitoring needs it)")
                    elif number not in public | admin:
                        report.fail(f"{where}: admits {kind}/{name} on port {port.get('port')}; it serves"
                                    f" {sorted(public | admin) or 'nothing'}")
            for rule in policy["spec"].get("egress") or []:
                egress_ports |= {p.get("port") for p in rule.get("ports") or [{"port": "any"}]}
        needs = {53: "DNS"}
        if executables:
            needs[5432] = "PostgreSQL"
        if executables - {"facegate"} or any("create-topics.sh" in str(c.get("command")) for c in containers):
            needs[9092] = "Kafka"
        for port, what in needs.items():
            if port not in egress_ports and "any" not in egress_ports:
                report.fail(f"{kind}/{name}: no NetworkPolicy lets it reach {what} (port {port}); the default deny cuts it off")


def check_public_entrance(report: FileReport, by_kind: dict[str, list[dict[str, Any]]],
                          config_maps: dict[str, dict[str, str]]) -> None:
    """The public API is reached over TLS through an Ingress to the gateway's Service, on the host of FACEGATE_PUBLIC_URL
    (device proofs name that URL); the gateway trusts X-Forwarded-For only from FACEGATE_TRUSTED_PROXIES, a list of
    addresses and CIDR ranges, and its public port admits only a named source (so no other pod can claim an address)."""
    import ipaddress
    from urllib.parse import urlsplit

    gateways = [d for d in by_kind.get("Deployment", [])
                if any(container_env(c, config_maps)[0].get("SERVICE") == "auth-gateway" for c in d["spec"]["template"]["spec"]["containers"])]
    if not gateways:
        return
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    ingresses = by_kind.get("Ingress", [])
    for gateway in gateways:
        name = gateway["metadata"]["name"]
        env = {}
        for container in gateway["spec"]["template"]["spec"]["containers"]:
            env.update(container_env(container, config_maps)[0])
        host = urlsplit(str(env.get("FACEGATE_PUBLIC_URL", ""))).hostname
        proxies = str(env.get("FACEGATE_TRUSTED_PROXIES", "")).strip()
        if not proxies:
            report.fail(f"Deployment/{name}: no FACEGATE_TRUSTED_PROXIES: behind the ingress every client would share its address's limits")
        for entry in filter(None, (e.strip() for e in proxies.split(","))):
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                report.fail(f"Deployment/{name}: FACEGATE_TRUSTED_PROXIES entry {entry!r} is not an address or a CIDR range")
        labels = gateway["spec"]["template"]["metadata"].get("labels") or {}
        fronting = {s for s, service in services.items() if (service["spec"].get("selector") or {}) and pod_labels_match(service["spec"]["selector"], labels)}
        routed = []
        for ingress in ingresses:
            tls_hosts = {h for t in ingress["spec"].get("tls") or [] for h in t.get("hosts") or []}
            for rule in ingress["spec"].get("rules") or []:
                for path in (rule.get("http") or {}).get("paths") or []:
                    backend = (path.get("backend") or {}).get("service") or {}
                    if backend.get("name") in fronting:
                        routed.append((ingress["metadata"]["name"], rule.get("host"), rule.get("host") in tls_hosts))
        if not routed:
            report.fail(f"Deployment/{name}: no Ingress routes to its Service: the public API has no TLS entrance")
        for ingress, rule_host, tls in routed:
            if not tls:
                report.fail(f"Ingress/{ingress}: the host {rule_host!r} has no TLS: the public API would be plain HTTP")
            if host and rule_host != host:
                report.fail(f"Ingress/{ingress}: the host {rule_host!r} is not FACEGATE_PUBLIC_URL's {host!r}: device proofs would be refused")
        for policy in by_kind.get("NetworkPolicy", []):
            if not selector_matches(policy["spec"].get("podSelector") or {}, labels) or not policy["spec"].get("podSelector"):
                continue
            for rule in policy["spec"].get("ingress") or []:
                if any(p.get("port") in ("http", HTTP_PORT) for p in rule.get("ports") or []) and not rule.get("from"):
                    report.fail(f"NetworkPolicy/{policy['metadata']['name']}: the gateway's public port is open to every pod,"
                                " any of which could claim a client address in X-Forwarded-For")


def check_kafka_clients(report: FileReport, by_kind: dict[str, list[dict[str, Any]]],
                        config_maps: dict[str, dict[str, str]], protocols: dict[str, str]) -> None:
    """When the services speak TLS or SASL to the broker, so must the other Kafka clients of the layout:
    the topics Job (a client properties file, COMMAND_CONFIG) and the matcher autoscaler (KEDA's
    sasl/tls trigger settings and a TriggerAuthentication for the credentials)."""
    secured = {where: p for where, p in protocols.items() if p != "plaintext"}
    if not secured:
        return
    if len(set(protocols.values())) > 1:
        report.fail(f"the services reach the broker differently: {dict(sorted(protocols.items()))}")
    protocol = next(iter(secured.values()))
    for job in by_kind.get("Job", []):
        for container in job["spec"]["template"]["spec"]["containers"]:
            if "create-topics.sh" not in str(container.get("command")):
                continue
            env, _ = container_env(container, config_maps)
            if "COMMAND_CONFIG" not in env:
                report.fail(f"Job/{job['metadata']['name']}/{container['name']}: the services use {protocol}, but the topics"
                            " script has no COMMAND_CONFIG (client properties for the Kafka tools)")
            else:
                location = str(env["COMMAND_CONFIG"])
                mounts = [str(m.get("mountPath", "")) for m in container.get("volumeMounts") or []]
                if not any(location.startswith(m.rstrip("/") + "/") for m in mounts):
                    report.fail(f"Job/{job['metadata']['name']}/{container['name']}: COMMAND_CONFIG={location} is not inside a mounted volume")
    authentications = {a["metadata"]["name"]: a for a in by_kind.get("TriggerAuthentication", [])}
    for scaled in by_kind.get("ScaledObject", []):
        name = scaled["metadata"]["name"]
        for trigger in scaled["spec"].get("triggers", []):
            metadata = trigger.get("metadata") or {}
            wanted_tls = "enable" if protocol in ("ssl", "sasl_ssl") else None
            if wanted_tls and metadata.get("tls") != wanted_tls:
                report.fail(f"ScaledObject/{name}: the services use {protocol}, but the trigger does not set tls: enable")
            if protocol.startswith("sasl_") and metadata.get("sasl") in (None, "none"):
                report.fail(f"ScaledObject/{name}: the services use {protocol}, but the trigger sets no sasl mechanism")
            reference = (trigger.get("authenticationRef") or {}).get("name")
            if protocol.startswith("sasl_") and reference is None:
                report.fail(f"ScaledObject/{name}: the services use {protocol}, but the trigger has no authenticationRef"
                            " (KEDA would read the consumer lag without credentials)")
            elif reference is not None and reference not in authentications:
                report.fail(f"ScaledObject/{name}: authenticationRef {reference} is not a TriggerAuthentication of this layout")
            elif reference is not None:
                spec = authentications[reference].get("spec") or {}
                parameters = {e.get("parameter") for e in (spec.get("secretTargetRef") or []) + (spec.get("env") or [])}
                for needed in (("username", "password") if protocol.startswith("sasl_") else ()):
                    if needed not in parameters:
                        report.fail(f"TriggerAuthentication/{reference}: no {needed} for ScaledObject/{name}")


def check_rendered_layout(report: FileReport, documents: list[dict[str, Any]], image_env: dict[str, str],
                          secret_keys: set[str], topics: dict[str, tuple[int, dict[str, str]]],
                          crd_schemas: dict[str, dict[str, Any]], secret_variables: dict[str, str] | None = None) -> None:
    for document in documents:
        for error in kubernetes_errors(document, crd_schemas):
            report.fail(error)
    if report.problems:
        report.fail("contract checks skipped until the objects match their schemas")
        return
    try:
        check_layout_contract(report, documents, image_env, secret_keys, topics, secret_variables)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as error:
        report.fail(f"contract checks could not read the objects: {type(error).__name__}: {error}")


def check_layout_contract(report: FileReport, documents: list[dict[str, Any]], image_env: dict[str, str],
                          secret_keys: set[str], topics: dict[str, tuple[int, dict[str, str]]],
                          secret_variables: dict[str, str] | None = None) -> None:
    secret_variables = secret_variables or {}
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        by_kind.setdefault(document.get("kind", "?"), []).append(document)
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in by_kind.get("ConfigMap", [])}
    namespaces = {(d.get("metadata") or {}).get("namespace") for d in documents if d.get("kind") != "Namespace"}
    if len(namespaces) != 1 or None in namespaces:
        report.fail(f"resources are not all in one namespace: {sorted(map(str, namespaces))}")
    for config_map in by_kind.get("ConfigMap", []):
        for key in config_map.get("data", {}):
            if key.startswith(CONTRACT_PREFIXES) and key not in ALL_SERVICES_ENV:
                report.fail(f"ConfigMap/{config_map['metadata']['name']}: {key} is not a variable of the runtime contract")
            else:
                for problem in env_file_problems(key, str(config_map["data"][key])):
                    report.fail(f"ConfigMap/{config_map['metadata']['name']}: {problem}")

    workloads = by_kind.get("Deployment", []) + by_kind.get("Job", [])
    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    services_running: set[str] = set()
    gateways: dict[str, dict[str, Any]] = {}
    matchers: dict[str, dict[str, Any]] = {}
    public_lists: dict[str, str] = {}
    audit_sources: dict[str, dict[str, str]] = {AUDIT_KEY: {}, PREVIOUS_AUDIT_KEYS: {}}
    audit_writers: set[str] = set()
    kafka_protocols: dict[str, str] = {}
    for workload in workloads:
        kind, name = workload["kind"], workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        check_secret_volumes(report, kind, name, pod, config_maps, secret_variables)
        security = pod.get("securityContext") or {}
        if not security.get("runAsNonRoot"):
            report.fail(f"{kind}/{name}: pod securityContext.runAsNonRoot is not true")
        if kind == "Deployment" and pod.get("enableServiceLinks", True):
            report.fail(f"{kind}/{name}: enableServiceLinks must be false (service links inject *_PORT variables)")
        for container in (pod.get("initContainers") or []) + pod.get("containers", []):
            where = f"{kind}/{name}/{container['name']}"
            problem = image_problem(container.get("image", ""))
            if problem:
                report.fail(f"{where}: {problem}")
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in (resources.get(section) or {}):
                        report.fail(f"{where}: resources.{section}.{resource} is not set")
            if not (container.get("securityContext") or {}).get("readOnlyRootFilesystem"):
                report.fail(f"{where}: readOnlyRootFilesystem is not true")
            env, ref_problems = container_env(container, config_maps)
            for problem in ref_problems:
                report.fail(f"{where}: {problem}")
            sets_role_passwords = any(ROLE_PASSWORD_SCRIPT in str(word)
                                      for word in (container.get("command") or []) + (container.get("args") or []))
            if sets_role_passwords:
                check_role_password_container(report, where, container)
            for variable in container.get("env", []) or []:
                secret = ((variable.get("valueFrom") or {}).get("secretKeyRef") or {})
                if secret and secret.get("name") == "facegate-secrets" and secret.get("key") not in secret_keys:
                    report.fail(f"{where}: secret key {secret.get('key')} is not documented in secret.example.yaml")
                documented = secret_variables.get(secret.get("key")) if secret else None
                # The role-password setter reads the same URLs under its own names.
                alias = {DATABASE_URL_KEYS[e]: v for e, v in ROLE_PASSWORD_ENV.items()}.get(secret.get("key"))
                if sets_role_passwords and alias and variable["name"] == alias:
                    continue
                if documented and variable["name"] != documented:
                    # e.g. ctid-private-key handed to the gateway as FACEGATE_CTID_PUBLIC_KEY.
                    report.fail(f"{where}: secret key {secret.get('key')} is mapped to {variable['name']},"
                                f" secret.example.yaml documents it as {documented}")
            selected = env.get("SERVICE")
            check_container_service_keys(report, where, selected if isinstance(selected, str) else None,
                                         container, env, config_maps, public_lists)
            check_container_secrets(report, where, selected if isinstance(selected, str) else None,
                                    container, env, secret_variables)
            if selected is None:
                continue
            if selected not in EXECUTABLES:
                report.fail(f"{where}: SERVICE={selected} is not an executable")
                continue
            services_running.add(selected)
            check_env_for_service(report, where, selected, env, set(image_env))
            check_database_secret(report, where, selected, container, env)
            if selected in AUDIT_WRITERS:
                audit_writers.add(where)
                for key in audit_sources:
                    ref = ((env.get(key) or {}) if isinstance(env.get(key), dict) else {}).get("secretKeyRef")
                    if key in env:
                        audit_sources[key][where] = (f"Secret {ref.get('name')} key {ref.get('key')}" if ref
                                                     else str(env[key]))
            if selected in SERVICES:
                mounts = [str(m.get("mountPath", "")) for m in container.get("volumeMounts") or []]
                for problem in kafka_security_problems(env, mounts):
                    report.fail(f"{where}: {problem}")
                protocol = env.get(KAFKA_SECURITY_PROTOCOL, "plaintext")
                kafka_protocols[where] = protocol.lower() if isinstance(protocol, str) else "?"
            if selected == "auth-gateway":
                gateways[where] = env
            elif selected == "matcher-worker":
                matchers[where] = env
            if selected == "facegate":
                if container.get("args") != ["migrate"]:
                    report.fail(f"{where}: the CLI Job must run `migrate`")
                continue
            if kind != "Deployment":
                report.fail(f"{where}: services run as Deployments")
            admin = ADMIN_PORTS[selected]
            if str(env.get("FACEGATE_ADMIN_PORT", admin)) != str(admin):
                report.fail(f"{where}: FACEGATE_ADMIN_PORT is not the contract's {admin}")
            ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
            if ports.get("admin") != admin:
                report.fail(f"{where}: container port 'admin' is not {admin}")
            if selected == "auth-gateway" and ports.get("http") != HTTP_PORT:
                report.fail(f"{where}: container port 'http' is not {HTTP_PORT}")
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
                http = ((container.get(probe) or {}).get("httpGet") or {})
                if http.get("path") != path or http.get("port") not in ("admin", admin):
                    report.fail(f"{where}: {probe} must GET {path} on the admin port")
            shard_count = int(str(env.get("MATCHER_SHARD_COUNT", "1")))
            shard_index = int(str(env.get("MATCHER_SHARD_INDEX", "0")))
            if selected == "matcher-worker" and not 0 <= shard_index < shard_count:
                report.fail(f"{where}: MATCHER_SHARD_INDEX {shard_index} not in 0..{shard_count - 1}")
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if kind == "Deployment" and grace <= 20:
            report.fail(f"{kind}/{name}: terminationGracePeriodSeconds {grace} must exceed FACEGATE_SHUTDOWN_SECONDS (20)")
    for missing in sorted(set(EXECUTABLES) - services_running):
        report.fail(f"nothing runs {missing}")
    check_audit_sources(report, audit_sources, audit_writers)
    check_kafka_clients(report, by_kind, config_maps, kafka_protocols)
    check_public_entrance(report, by_kind, config_maps)
    if len(set(public_lists.values())) > 1:
        report.fail(f"the services are given different {SERVICE_PUBLIC_KEYS}: {sorted(public_lists)};"
                    " a service missing from another's list has its messages refused")
    check_matcher_shards(report, gateways, matchers)
    facegate_images = {c.get("image") for w in workloads
                       for c in (w["spec"]["template"]["spec"].get("initContainers") or []) + w["spec"]["template"]["spec"]["containers"]
                       if any(v.get("name") == "SERVICE" for v in c.get("env", []) or [])}
    check_network_policies(report, by_kind, config_maps)
    check_pod_monitors(report, by_kind, config_maps)
    if len(facegate_images) > 1:
        report.fail(f"FaceGate workloads run different images: {sorted(map(str, facegate_images))}")

    def pods_selected(selector: dict[str, str]) -> list[str]:
        return [n for n, d in deployments.items()
                if pod_labels_match(selector, d["spec"]["template"]["metadata"].get("labels", {}))]

    for service in by_kind.get("Service", []):
        selected = pods_selected(service["spec"].get("selector", {}))
        if not selected:
            report.fail(f"Service/{service['metadata']['name']}: selects no Deployment's pods")
        for port in service["spec"].get("ports", []):
            target = port.get("targetPort")
            for deployment in selected:
                names = {p.get("name") for c in deployments[deployment]["spec"]["template"]["spec"]["containers"]
                         for p in c.get("ports", [])}
                if isinstance(target, str) and target not in names:
                    report.fail(f"Service/{service['metadata']['name']}: targetPort {target} is not a port of {deployment}")
    for budget in by_kind.get("PodDisruptionBudget", []):
        if not pods_selected(budget["spec"].get("selector", {}).get("matchLabels", {})):
            report.fail(f"PodDisruptionBudget/{budget['metadata']['name']}: selects no Deployment's pods")
    for deployment in deployments.values():
        selector = deployment["spec"]["selector"].get("matchLabels", {})
        if not pod_labels_match(selector, deployment["spec"]["template"]["metadata"].get("labels", {})):
            report.fail(f"Deployment/{deployment['metadata']['name']}: selector does not match its pod labels")

    matcher_deployments = set()
    for name, deployment in deployments.items():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            env, _ = container_env(container, config_maps)
            if env.get("SERVICE") == "matcher-worker":
                matcher_deployments.add(name)
    scaled_targets = set()
    for scaled in by_kind.get("ScaledObject", []):
        name = scaled["metadata"]["name"]
        spec = scaled.get("spec", {})
        target = (spec.get("scaleTargetRef") or {}).get("name")
        if target not in deployments:
            report.fail(f"ScaledObject/{name}: target {target} is not a Deployment of this layout")
            continue
        scaled_targets.add(target)
        if "replicas" in deployments[target]["spec"]:
            report.fail(f"Deployment/{target}: spec.replicas is set although ScaledObject/{name} owns it")
        container = deployments[target]["spec"]["template"]["spec"]["containers"][0]
        env, _ = container_env(container, config_maps)
        count = int(str(env.get("MATCHER_SHARD_COUNT", "1")))
        index = int(str(env.get("MATCHER_SHARD_INDEX", "0")))
        expected_group = MATCHER_GROUP if count == 1 else f"{MATCHER_GROUP}-shard-{index}-of-{count}"
        for trigger in spec.get("triggers", []):
            metadata = trigger.get("metadata", {})
            if metadata.get("consumerGroup") != expected_group:
                report.fail(f"ScaledObject/{name}: consumerGroup {metadata.get('consumerGroup')} but {target} consumes as {expected_group}")
            topic = metadata.get("topic")
            if topic != MATCHER_TOPIC:
                report.fail(f"ScaledObject/{name}: topic {topic} is not {MATCHER_TOPIC}")
            partitions = topics.get(topic, TOPICS.get(topic, (0, {})))[0]
            maximum = spec.get("maxReplicaCount", 100)
            if maximum > partitions:
                report.fail(f"ScaledObject/{name}: maxReplicaCount {maximum} exceeds the {partitions} partitions of {topic} (extra replicas would idle)")
            if spec.get("minReplicaCount", 0) < 1:
                report.fail(f"ScaledObject/{name}: minReplicaCount below 1 leaves no matcher to answer jobs")
            brokers = next((data.get("FACEGATE_KAFKA_BROKERS") for cm_name, data in config_maps.items()
                            if re.sub(r"-[a-z0-9]{10}$", "", cm_name) == "facegate-config"), None)
            if brokers is not None and metadata.get("bootstrapServers") != brokers:
                report.fail(f"ScaledObject/{name}: bootstrapServers differ from FACEGATE_KAFKA_BROKERS")
    for unscaled in sorted(matcher_deployments - scaled_targets):
        if "replicas" not in deployments[unscaled]["spec"]:
            report.fail(f"Deployment/{unscaled}: no replicas and no autoscaler")


def check_secret_database_urls(report: FileReport, documents: list[dict[str, Any]]) -> None:
    """The example Secret has one database URL per role, each naming its role, each its own password."""
    data: dict[str, str] = {}
    for document in documents:
        data.update({k: str(v) for k, v in (document.get("stringData") or {}).items()})
    passwords: dict[str, list[str]] = {}
    for executable, key in DATABASE_URL_KEYS.items():
        if key not in data:
            report.fail(f"{key} is missing: the database URL of {executable} ({DATABASE_ROLES[executable]})")
            continue
        check_database_role(report, key, executable, data[key], SUPERUSERS, "the URL")
        login = database_url_login(data[key])
        if login:
            passwords.setdefault(login[1], []).append(key)
    for keys in passwords.values():
        if len(keys) > 1:
            report.fail(f"{', '.join(keys)} share one password: each role has its own")


def secret_keys(documents: list[dict[str, Any]]) -> set[str]:
    """Every key the Secret documents define, in stringData or data."""
    keys: set[str] = set()
    for document in documents:
        keys |= set((document.get("stringData") or {}).keys()) | set((document.get("data") or {}).keys())
    return keys


def check_secret_service_keys(report: FileReport, documents: list[dict[str, Any]],
                              secret_variables: dict[str, str]) -> None:
    """The example Secret has each service's message-signing seed under its own key, documented as
    FACEGATE_SERVICE_KEY."""
    keys = secret_keys(documents)
    for service, key in SERVICE_KEY_SECRET_KEYS.items():
        if key not in keys:
            report.fail(f"{key} is missing: {service}'s message-signing key ({SERVICE_KEY})")
        elif secret_variables.get(key) != SERVICE_KEY:
            report.fail(f"{key} is not documented as {SERVICE_KEY} of {service}")


def check_secret_token_keys(report: FileReport, documents: list[dict[str, Any]],
                            secret_variables: dict[str, str]) -> None:
    """The example Secret has the token and audit keys, each documented as its one variable."""
    keys = secret_keys(documents)
    for key, variable in SECRET_TOKEN_KEYS.items():
        if key not in keys:
            report.fail(f"{key} is missing: {variable} ({SECRET_WHAT[variable]})")
        elif secret_variables.get(key) != variable:
            report.fail(f"{key} is not documented as {variable}")
    for service, key in KAFKA_PASSWORD_SECRET_KEYS.items():
        if key in secret_variables and secret_variables[key] != KAFKA_SASL_PASSWORD:
            report.fail(f"{key} is not documented as {KAFKA_SASL_PASSWORD} of {service}")


# Keys the example Secret must have, with the variable each is documented as.
SECRET_TOKEN_KEYS = {"signing-key": SIGNING_KEY, "kiosk-signing-key": KIOSK_SIGNING_KEY, "audit-key": AUDIT_KEY}


class LayoutRender:
    """kubectl kustomize of a layout, with optional components added in a scratch kustomization
    (kustomize takes neither absolute paths nor components on the command line). Started at once,
    so the layouts render while the manifests are checked; result() waits for it."""

    def __init__(self, kubectl: str, root: Path, layout: str, components: list[str]) -> None:
        import tempfile
        self.scratch: tempfile.TemporaryDirectory[str] | None = None
        target = str(root / layout)
        if components:
            self.scratch = tempfile.TemporaryDirectory(prefix="facegate-kustomize-")
            target = self.scratch.name
            lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", "resources:",
                     f"  - {os.path.relpath(root / layout, target)}", "components:"]
            lines += [f"  - {os.path.relpath(root / c, target)}" for c in components]
            (Path(target) / "kustomization.yaml").write_text("\n".join(lines) + "\n")
        self.process = subprocess.Popen([kubectl, "kustomize", target], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)

    def result(self) -> subprocess.CompletedProcess[str]:
        try:
            stdout, stderr = self.process.communicate()
        finally:
            self.close()
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, stdout, stderr)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
        if self.scratch is not None:
            self.scratch.cleanup()
            self.scratch = None


@functools.lru_cache(maxsize=None)
def load_json_schema(text: str) -> dict[str, Any]:
    """A JSON Schema file's content, parsed and checked against its metaschema (one object per
    content, which schema_errors keys its validators on)."""
    schema = json.loads(text)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def check_kubernetes(root: Path, reporter: Reporter, image_env: dict[str, str],
                     topics: dict[str, tuple[int, dict[str, str]]]) -> None:
    # Every layout, then every layout with each component, by the name its report has.
    renders = {f"{layout} (kubectl kustomize)": (layout, []) for layout in KUSTOMIZE_LAYOUTS}
    renders |= {f"{layout} + {component} (kubectl kustomize)": (layout, [component])
                for component in KUSTOMIZE_COMPONENTS for layout in KUSTOMIZE_LAYOUTS}
    wanted = [name for name in renders if reporter.wants(name)]
    kubectl = tool("kubectl") if wanted else ""
    started: dict[str, LayoutRender] = {}
    try:
        for name in wanted:
            started[name] = LayoutRender(kubectl, root, *renders[name])
        check_kubernetes_files(root, reporter, image_env, topics, list(renders), started)
    finally:
        for render in started.values():
            render.close()


def check_kubernetes_files(root: Path, reporter: Reporter, image_env: dict[str, str],
                           topics: dict[str, tuple[int, dict[str, str]]], renders: list[str],
                           started: dict[str, LayoutRender]) -> None:
    """The files under deploy/k8s, then the layouts (renders: their report names, in order; started:
    those asked for, rendering)."""
    crd_schemas: dict[str, dict[str, Any]] = {}
    for kind, file_key in CRD_SCHEMAS.items():
        report = reporter.file(ROOT_FILES[file_key], "valid JSON Schema")
        try:
            crd_schemas[kind] = load_json_schema((root / ROOT_FILES[file_key]).read_text())
        except (OSError, ValueError, jsonschema.SchemaError) as error:
            report.fail(str(error).splitlines()[0])

    secret_keys: set[str] = set()
    secret_variables: dict[str, str] = {}
    secret_path = root / ROOT_FILES["secret_example"]
    k8s_root = root / "deploy/k8s"
    for path in sorted(k8s_root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_dir():
            continue
        if path.suffix not in (".yaml", ".yml"):
            if path.suffix == ".env":
                report = reporter.file(relative, "contract names only, no secrets, public key lists")
                for line in path.read_text().splitlines():
                    if line.strip() and not line.startswith("#"):
                        key, _, value = line.partition("=")
                        if key not in ALL_SERVICES_ENV:
                            report.fail(f"{key} is not a variable of the runtime contract")
                        else:
                            for problem in env_file_problems(key, value):
                                report.fail(problem)
            continue
        if path.name == "kustomization.yaml":
            report = reporter.file(relative, "kustomization: listed files exist")
            try:
                kustomization = load_yaml_documents(path)[0]
            except (yaml.YAMLError, IndexError) as error:
                report.fail(f"YAML: {error}")
                continue
            if not isinstance(kustomization, dict):
                report.fail("not a mapping")
                continue
            for field_name in ("resources", "components"):
                for entry in kustomization.get(field_name) or []:
                    if not (path.parent / entry).exists():
                        report.fail(f"{field_name[:-1]} {entry} does not exist")
            for patch in kustomization.get("patches") or []:
                if isinstance(patch, dict) and patch.get("path") and not (path.parent / patch["path"]).exists():
                    report.fail(f"patch {patch['path']} does not exist")
            continue
        text = path.read_text()
        kinds = [k for k in CRD_SCHEMAS if f"kind: {k}" in text]
        report = reporter.file(relative, "Kubernetes schemas (strict)" + "".join(f", {k} schema" for k in kinds))
        checked = reporter.wants(relative)
        if not checked and path != secret_path:
            continue  # (the example Secret's keys are needed by the layouts)
        try:
            documents = load_yaml_documents(path)
        except yaml.YAMLError as error:
            report.fail(f"YAML: {error}")
            continue
        for document in documents if checked else []:
            if not isinstance(document, dict):
                report.fail("a YAML document is not a mapping")
                continue
            for error in kubernetes_errors(document, crd_schemas):
                report.fail(error)
        if path == secret_path:
            for document in filter(lambda d: isinstance(d, dict), documents):
                secret_keys |= set((document.get("stringData") or {}).keys()) | set((document.get("data") or {}).keys())
            # Optional keys are documented in the comment table ("#   key   who reads it").
            secret_keys |= set(re.findall(r"^#   ([a-z][a-z-]+)\s{2,}FACEGATE_", text, re.M))
            # ... and name the one variable each key may be mapped to.
            secret_variables = dict(re.findall(r"^#   ([a-z][a-z-]+)\s{2,}(FACEGATE_\w+)", text, re.M))
            check_secret_database_urls(report, [d for d in documents if isinstance(d, dict)])
            check_secret_service_keys(report, [d for d in documents if isinstance(d, dict)], secret_variables)
            check_secret_token_keys(report, [d for d in documents if isinstance(d, dict)], secret_variables)
        if relative == ROOT_FILES["prometheus_rule"] and checked:
            check_prometheus_rule_copy(root, report, documents)

    for name in renders:
        report = reporter.file(name, "rendered layout: schemas, contract, probes, selectors, autoscaling")
        if name not in started:
            continue  # not asked for
        result = started[name].result()
        if result.returncode != 0:
            report.fail(f"kubectl kustomize: {result.stderr.strip()}")
            continue
        documents = [d for d in yaml.load_all(result.stdout, Loader=YAML_LOADER) if d]
        check_rendered_layout(report, documents, image_env, secret_keys, topics, crd_schemas, secret_variables)


# --------------------------------------------------------------------------------------------
# Metrics and alerts: deploy/prometheus/alerts.yml and its PrometheusRule copy.

def registered_metrics(root: Path) -> dict[str, str]:
    """The series names of the metrics the Swift sources register, each with its type (a histogram is
    exposed as its _bucket, _sum and _count series only)."""
    names: dict[str, str] = {}
    for folder in METRIC_SOURCE_DIRS:
        for source in sorted((root / folder).rglob("*.swift")):
            for kind, name in METRIC_REGISTRATION.findall(source.read_text(errors="replace")):
                if kind == "histogram":
                    names |= {f"{name}_{suffix}": kind for suffix in ("bucket", "sum", "count")}
                else:
                    names[name] = kind
    return names


def markdown_anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives the headings (GitHub's rule: lower case, punctuation
    dropped, spaces to hyphens, -1, -2 ... for repeats); fenced code is no heading."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        repeat = seen.get(slug, 0)
        seen[slug] = repeat + 1
        anchors.add(slug if repeat == 0 else f"{slug}-{repeat}")
    return anchors


def promql_module() -> Any:
    """promql-parser (deploy/validate/requirements.txt): the PromQL grammar and functions of Prometheus."""
    try:
        import promql_parser
    except ImportError:
        raise SystemExit("validate-deploy: promql-parser is not installed (run scripts/validate-deploy.sh)")
    return promql_parser


def promql_selectors(promql: Any, tree: Any) -> list[Any]:
    """The distinct vector selectors of an expression (those inside range selectors included), in order."""
    found: dict[str, Any] = {}

    def visit(node: Any) -> None:
        if isinstance(node, promql.MatrixSelector):
            node = node.vector_selector
        if isinstance(node, promql.VectorSelector):
            found.setdefault(str(node), node)
    promql.walk(tree, visit)
    return list(found.values())


def selector_name(selector: Any) -> str | None:
    if selector.name:
        return selector.name
    for matcher in selector.matchers.matchers:
        if matcher.name == "__name__" and str(matcher.op).rsplit(".", 1)[-1] == "Equal":
            return matcher.value
    return None


# Functions whose result keeps the labels of their (first vector) argument.
LABEL_KEEPING_FUNCTIONS = {
    "abs", "ceil", "floor", "round", "clamp", "clamp_min", "clamp_max", "exp", "ln", "log2", "log10", "sqrt",
    "rate", "irate", "increase", "delta", "idelta", "deriv", "changes", "resets", "predict_linear",
    "avg_over_time", "min_over_time", "max_over_time", "sum_over_time", "count_over_time",
    "last_over_time", "stddev_over_time", "stdvar_over_time", "quantile_over_time", "present_over_time",
    "histogram_quantile", "sort", "sort_desc",
}


def kept_labels(promql: Any, node: Any) -> set[str] | None:
    """The labels an expression's result can carry, when the expression bounds them (an aggregation
    by a list, a constant); None when they are the selected series' own, whatever those are."""
    if isinstance(node, promql.ParenExpr):
        return kept_labels(promql, node.expr)
    if isinstance(node, (promql.NumberLiteral, promql.StringLiteral)):
        return set()
    if isinstance(node, promql.AggregateExpr):
        modifier = node.modifier
        if modifier is None:
            return set()
        if str(modifier.type).endswith("By"):
            return set(modifier.labels)
        return None
    if isinstance(node, promql.Call):
        if node.func.name in LABEL_KEEPING_FUNCTIONS:
            arguments = [a for a in node.args if not isinstance(a, (promql.NumberLiteral, promql.StringLiteral))]
            return kept_labels(promql, arguments[-1] if node.func.name == "histogram_quantile" else arguments[0]) if arguments else set()
        return None
    if isinstance(node, promql.BinaryExpr):
        left, right = kept_labels(promql, node.lhs), kept_labels(promql, node.rhs)
        if str(node.op) == "or":
            return None if left is None or right is None else left | right
        if isinstance(node.rhs, promql.NumberLiteral):
            return left
        if isinstance(node.lhs, promql.NumberLiteral):
            return right
        return left
    if isinstance(node, promql.UnaryExpr):
        return kept_labels(promql, node.expr)
    return None


def check_job_matchers(report: FileReport, alert: str, selector: Any, name: str, covered: dict[str, set[str]]) -> None:
    """A metric every scraped job exposes (up, process_*) is read for FaceGate's jobs only, named by the
    service: job="<service>" or job=~"<service>|<service>..."."""
    matchers = [m for m in selector.matchers.matchers if m.name == "job"]
    if not matchers:
        report.fail(f"{alert}: {name} is exposed by every job Prometheus scrapes; select FaceGate's with"
                    f" job=~\"{'|'.join(SERVICES)}\"")
        return
    for matcher in matchers:
        operator = str(matcher.op).rsplit(".", 1)[-1]
        if operator not in ("Equal", "Re"):
            report.fail(f"{alert}: {name}{{job{'!=' if operator == 'NotEqual' else '!~'}\"{matcher.value}\"}} excludes jobs;"
                        f" name FaceGate's instead (job=~\"{'|'.join(SERVICES)}\")")
            continue
        jobs = matcher.value.split("|") if operator == "Re" else [matcher.value]
        for job in jobs:
            if job not in SERVICES:
                report.fail(f"{alert}: {name} is read for job \"{job}\", which is not a FaceGate service's job"
                            f" (the job label is the service's name: {', '.join(SERVICES)})")
        covered.setdefault(name, set()).update(j for j in jobs if j in SERVICES)


def load_rule_file(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A Prometheus rule file as a mapping with groups, or why it is not one."""
    try:
        documents = load_yaml_documents(path)
    except OSError:
        return None, "missing"
    except yaml.YAMLError as error:
        return None, f"YAML: {' '.join(str(error).split())}"
    if len(documents) != 1 or not isinstance(documents[0], dict) or "groups" not in documents[0]:
        return None, "not a Prometheus rule file (one YAML mapping with groups:)"
    return documents[0], None


def check_prometheus(root: Path, reporter: Reporter) -> None:
    """deploy/prometheus/alerts.yml: shape, alerts complete, runbooks, PromQL, metric names."""
    relative = ROOT_FILES["alerts"]
    report = reporter.file(relative, "rule file: PromQL parsed, metrics registered, for, severity, annotations, runbooks")
    if not reporter.wants(relative):
        return
    rules_file, problem = load_rule_file(root / relative)
    if rules_file is None:
        report.fail(str(problem))
        return
    # The rule file is a PrometheusRule's spec: one schema checks both.
    try:
        schema = load_json_schema((root / ROOT_FILES["prometheus_rule_schema"]).read_text())
    except (OSError, ValueError, jsonschema.SchemaError) as error:
        report.fail(f"{ROOT_FILES['prometheus_rule_schema']} is unusable: {str(error).splitlines()[0]}")
        return
    wrapped = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "alerts"},
               "spec": rules_file}
    errors = [e.replace("schema: spec/", "schema: ", 1).replace("schema: spec:", "schema: (root):", 1)
              for e in schema_errors(schema, wrapped)]
    for error in errors:
        report.fail(error)
    if errors:
        report.fail("rule checks skipped until the file matches the rule-file schema")
        return

    promql = promql_module()
    metrics = registered_metrics(root)
    if not metrics:
        report.fail(f"no metric registration found in the Swift sources ({', '.join(METRIC_SOURCE_DIRS)}):"
                    " the metric names cannot be checked")
    known = set(metrics) | SCRAPE_METRICS
    readme = root / ROOT_FILES["deploy_readme"]
    anchors = markdown_anchors(readme.read_text()) if readme.exists() else set()
    group_names: set[str] = set()
    alert_names: set[str] = set()
    covered: dict[str, set[str]] = {}
    for group in rules_file["groups"]:
        if group["name"] in group_names:
            report.fail(f"group {group['name']} is defined twice (Prometheus refuses the file)")
        group_names.add(group["name"])
        for rule in group["rules"]:
            if "alert" not in rule:
                report.fail(f"group {group['name']}: recording rule {rule.get('record')}: this file holds alerts only")
                continue
            alert = rule["alert"]
            if alert in alert_names:
                report.fail(f"{alert} is defined twice: each alert has one rule and one runbook")
            alert_names.add(alert)
            if "for" not in rule:  # (its form is the schema's)
                report.fail(f"{alert}: no for: (how long the condition must hold before it fires; 0m fires at once)")
            severity = (rule.get("labels") or {}).get("severity")
            if severity is None:
                report.fail(f"{alert}: no labels.severity (Alertmanager routes on it: {'|'.join(sorted(ALERT_SEVERITIES))})")
            elif severity not in ALERT_SEVERITIES:
                report.fail(f"{alert}: severity {severity} is not one of {'|'.join(sorted(ALERT_SEVERITIES))}")
            annotations = rule.get("annotations") or {}
            for key in ALERT_ANNOTATIONS:
                if not str(annotations.get(key, "")).strip():
                    report.fail(f"{alert}: no annotations.{key}")
            for key, text in annotations.items():
                if text.count("{{") != text.count("}}"):
                    report.fail(f"{alert}: annotations.{key} has unbalanced {{{{ }}}} (a broken template)")
            runbook = str(annotations.get("runbook", "")).strip()
            if runbook:
                document, _, anchor = runbook.partition("#")
                if not document.endswith(ROOT_FILES["deploy_readme"]) or not anchor:
                    report.fail(f"{alert}: runbook {runbook} is not a section of {ROOT_FILES['deploy_readme']}"
                                f" ({ROOT_FILES['deploy_readme']}#<section>)")
                elif anchor not in anchors:
                    report.fail(f"{alert}: runbook {runbook}: {ROOT_FILES['deploy_readme']} has no section #{anchor}")
            try:
                tree = promql.parse(str(rule["expr"]))
            except ValueError as error:
                report.fail(f"{alert}: expr does not parse as PromQL: {' '.join(str(error).split())}")
                continue
            unknown: list[str] = []
            for selector in promql_selectors(promql, tree):
                name = selector_name(selector)
                if name is None:
                    report.fail(f"{alert}: a selector names no metric ({selector}); name the metric")
                    continue
                if metrics and name not in known and name not in unknown:
                    unknown.append(name)
                    report.fail(f"{alert}: {name} is not a metric the services register"
                                f" (Swift sources under {', '.join(METRIC_SOURCE_DIRS)}) nor one Prometheus adds ({', '.join(sorted(SCRAPE_METRICS))})")
                if name in SCRAPE_METRICS or name.startswith(SHARED_METRIC_PREFIXES):
                    check_job_matchers(report, alert, selector, name, covered)
            labels = kept_labels(promql, tree)
            if labels is not None:
                for key, text in annotations.items():
                    for label in sorted(set(re.findall(r"\$labels\.(\w+)", text)) - labels):
                        report.fail(f"{alert}: annotations.{key} prints $labels.{label}, which the expression does not keep"
                                    f" (its result carries {', '.join(sorted(labels)) or 'no label'})")
    for name, jobs in sorted(covered.items()):
        missing = [s for s in SERVICES if s not in jobs]
        if missing:
            report.fail(f"no rule reads {name} for {', '.join(missing)}: those services are not watched")


def check_dashboard(root: Path, reporter: Reporter) -> None:
    """deploy/grafana/facegate.json: a Grafana dashboard model whose every panel has a title and targets, and whose every
    query parses as PromQL and reads only metrics the services register (or Prometheus adds), like the alert rules."""
    relative = ROOT_FILES["dashboard"]
    report = reporter.file(relative, "dashboard: panels, PromQL parsed, metrics registered, unique ids and uid")
    if not reporter.wants(relative):
        return
    try:
        dashboard = json.loads((root / relative).read_text())
    except (OSError, ValueError) as error:
        report.fail(f"not a readable JSON dashboard: {error}")
        return
    for key in ("title", "uid", "schemaVersion", "panels"):
        if not dashboard.get(key):
            report.fail(f"no {key}")
    promql = promql_module()
    known = set(registered_metrics(root)) | SCRAPE_METRICS
    ids: set[Any] = set()
    for panel in dashboard.get("panels") or []:
        title = panel.get("title") or f"panel {panel.get('id')}"
        if panel.get("id") in ids:
            report.fail(f"{title}: panel id {panel.get('id')} is used twice")
        ids.add(panel.get("id"))
        if not panel.get("title"):
            report.fail(f"{title}: no title")
        targets = panel.get("targets") or []
        if not targets:
            report.fail(f"{title}: no query")
        for target in targets:
            expr = str(target.get("expr", ""))
            try:
                tree = promql.parse(expr)
            except ValueError as error:
                report.fail(f"{title}: query does not parse as PromQL: {' '.join(str(error).split())}")
                continue
            for selector in promql_selectors(promql, tree):
                name = selector_name(selector)
                if name is None or name not in known:
                    report.fail(f"{title}: {name or selector} is not a metric the services register"
                                f" (Swift sources under {', '.join(METRIC_SOURCE_DIRS)}) nor one Prometheus adds")


def prometheus_rule_text(alerts_text: str, current: str | None) -> str:
    """The PrometheusRule of deploy/k8s/monitoring made from the rule file: the current file's text up to
    its spec: line (header comment and metadata, which may carry the labels a Prometheus selects), then
    the rule file's groups, indented under spec."""
    head = None
    if current is not None and re.search(r"^spec:\s*$", current, re.M):
        head = current[:re.search(r"^spec:\s*$", current, re.M).end()] + "\n"
    if head is None:
        head = ("# The alert rules of deploy/prometheus/alerts.yml for the prometheus-operator (deploy/README.md#metrics-and-alerts).\n"
                "# GENERATED below spec: from that file, the one source: do not edit the groups here. Change\n"
                "# alerts.yml, then\n"
                "#   .run/deploy-venv/bin/python deploy/validate/validate_deploy.py --write-prometheus-rule\n"
                "# which keeps everything above spec: (add here a label your Prometheus's ruleSelector wants);\n"
                "# scripts/validate-deploy.sh fails while the groups differ from alerts.yml.\n"
                "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: facegate\n"
                "  namespace: facegate\n  labels:\n    app.kubernetes.io/name: facegate\n"
                "    app.kubernetes.io/part-of: facegate\nspec:\n")
    lines = alerts_text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^groups:", line)), None)
    if start is None:
        raise ValueError("the rule file has no top-level groups:")
    return head + "\n".join(("  " + line) if line.strip() else "" for line in lines[start:]) + "\n"


def write_prometheus_rule(root: Path) -> int:
    target = root / ROOT_FILES["prometheus_rule"]
    current = target.read_text() if target.exists() else None
    text = prometheus_rule_text((root / ROOT_FILES["alerts"]).read_text(), current)
    if text != current:
        target.write_text(text)
        print(f"validate-deploy: wrote {ROOT_FILES['prometheus_rule']} from {ROOT_FILES['alerts']}")
    else:
        print(f"validate-deploy: {ROOT_FILES['prometheus_rule']} is up to date")
    return 0


def rule_groups_difference(copy: Any, source: Any) -> str | None:
    """Where the PrometheusRule's groups first differ from the rule file's, or None when equal."""
    if copy == source:
        return None
    if not isinstance(copy, list) or not isinstance(source, list):
        return "spec.groups is not a list of groups"
    copy_groups = {g.get("name"): g for g in copy if isinstance(g, dict)}
    source_groups = {g.get("name"): g for g in source if isinstance(g, dict)}
    for name in source_groups:
        if name not in copy_groups:
            return f"group {name} is missing"
    for name in copy_groups:
        if name not in source_groups:
            return f"group {name} is not in the rule file"
    if list(copy_groups) != list(source_groups):
        return "the groups are in another order"
    for name, group in source_groups.items():
        theirs = copy_groups[name]
        for key in sorted(set(group) | set(theirs)):
            if key != "rules" and group.get(key) != theirs.get(key):
                return f"group {name}: {key} differs"
        ours_rules, their_rules = group.get("rules") or [], theirs.get("rules") or []
        for index in range(max(len(ours_rules), len(their_rules))):
            mine = ours_rules[index] if index < len(ours_rules) else None
            other = their_rules[index] if index < len(their_rules) else None
            if mine == other:
                continue
            label = (mine or other or {}).get("alert") or (mine or other or {}).get("record") or f"rule {index + 1}"
            if mine is None or other is None:
                return f"group {name}: {label} is {'missing' if other is None else 'not in the rule file'}"
            fields = sorted(k for k in set(mine) | set(other) if mine.get(k) != other.get(k))
            return f"group {name}: {label}: {', '.join(fields)} differ{'s' if len(fields) == 1 else ''}"
    return "the groups differ"


def check_prometheus_rule_copy(root: Path, report: FileReport, documents: list[Any]) -> None:
    """The PrometheusRule carries exactly the groups of deploy/prometheus/alerts.yml."""
    rules_file, problem = load_rule_file(root / ROOT_FILES["alerts"])
    if rules_file is None:
        report.fail(f"cannot be compared with {ROOT_FILES['alerts']}: {problem}")
        return
    rules = [d for d in documents if isinstance(d, dict) and d.get("kind") == "PrometheusRule"]
    if len(rules) != 1:
        report.fail(f"expected one PrometheusRule (the copy of {ROOT_FILES['alerts']}), found {len(rules)}")
        return
    difference = rule_groups_difference((rules[0].get("spec") or {}).get("groups"), rules_file["groups"])
    if difference is not None:
        report.fail(f"spec.groups differ from {ROOT_FILES['alerts']} ({difference}); regenerate it:"
                    " .run/deploy-venv/bin/python deploy/validate/validate_deploy.py --write-prometheus-rule")


def check_pod_monitors(report: FileReport, by_kind: dict[str, list[dict[str, Any]]],
                       config_maps: dict[str, dict[str, str]]) -> None:
    """With the monitoring component: every pod of the four services is scraped on its admin port at
    /metrics, with the job label its service's name (what the alert rules match), and nothing else
    is selected."""
    monitors = by_kind.get("PodMonitor", [])
    if not monitors:
        if by_kind.get("PrometheusRule"):
            report.fail("a PrometheusRule but no PodMonitor: nothing scrapes the metrics its rules read")
        return
    namespace = next(iter({(d.get("metadata") or {}).get("namespace") for d in by_kind.get("Deployment", [])}), None)
    workloads = by_kind.get("Deployment", []) + by_kind.get("Job", [])
    for monitor in monitors:
        where = f"PodMonitor/{monitor['metadata']['name']}"
        spec = monitor["spec"]
        namespaces = spec.get("namespaceSelector")
        if namespaces and not namespaces.get("any") and namespace not in (namespaces.get("matchNames") or []):
            report.fail(f"{where}: namespaceSelector leaves out the namespace {namespace}, where the services run")
        selected = 0
        for workload in workloads:
            kind, name = workload["kind"], workload["metadata"]["name"]
            template = workload["spec"]["template"]
            labels = template["metadata"].get("labels") or {}
            if not selector_matches(spec["selector"], labels):
                continue
            selected += 1
            containers = (template["spec"].get("initContainers") or []) + template["spec"]["containers"]
            services = {container_env(c, config_maps)[0].get("SERVICE") for c in containers} & set(SERVICES)
            if kind != "Deployment" or len(services) != 1:
                report.fail(f"{where}: selects the pods of {kind}/{name}, which serve no metrics")
                continue
            service = next(iter(services))
            job_label = spec.get("jobLabel")
            job = labels.get(job_label) if job_label else None
            if job != service:
                seen = f"'{job}'" if job else f"'{monitor['metadata'].get('namespace', namespace)}/{monitor['metadata']['name']}'"
                report.fail(f"{where}: the job label of {kind}/{name}'s pods would be {seen}; the alert rules expect"
                            f" '{service}' (jobLabel: {JOB_LABEL_SOURCE})")
            ports = {p.get("name"): p.get("containerPort") for c in template["spec"]["containers"] for p in c.get("ports") or []}
            for endpoint in spec["podMetricsEndpoints"]:
                port = endpoint.get("port")
                if ports.get(port) != ADMIN_PORTS[service]:
                    report.fail(f"{where}: port {port} is not the admin port of {kind}/{name}"
                                f" ({ADMIN_PORTS[service]}, named admin), where /metrics is served")
                if endpoint.get("path", "/metrics") != "/metrics":
                    report.fail(f"{where}: path {endpoint.get('path')}: the services serve their metrics at /metrics")
                if endpoint.get("scheme", "http") != "http":
                    report.fail(f"{where}: scheme {endpoint.get('scheme')}: the admin port speaks plain HTTP")
        if not selected:
            report.fail(f"{where}: selects no pod of the layout")
    for deployment in by_kind.get("Deployment", []):
        template = deployment["spec"]["template"]
        runs = {container_env(c, config_maps)[0].get("SERVICE") for c in template["spec"]["containers"]} & set(SERVICES)
        labels = template["metadata"].get("labels") or {}
        if runs and not any(selector_matches(m["spec"]["selector"], labels) for m in monitors):
            report.fail(f"Deployment/{deployment['metadata']['name']}: no PodMonitor selects its pods; its metrics are"
                        " never scraped and its alerts never fire")


# --------------------------------------------------------------------------------------------

def validate(root: Path, only: Iterable[str] | None = None) -> Reporter:
    """Checks the deployment files under root; only: the reports wanted (see Reporter), all when None."""
    reporter = Reporter(only)
    image_env = check_dockerfile(root, reporter)
    topics = check_scripts(root, reporter)
    check_compose(root, reporter, image_env, topics)
    check_prometheus(root, reporter)
    check_dashboard(root, reporter)
    check_kubernetes(root, reporter, image_env, topics)
    return reporter


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                        help="repository root (default: this checkout)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="check just this file or layout, named as printed (repeatable)")
    parser.add_argument("--write-prometheus-rule", action="store_true",
                        help=f"regenerate {ROOT_FILES['prometheus_rule']} from {ROOT_FILES['alerts']} and exit")
    arguments = parser.parse_args()
    if arguments.write_prometheus_rule:
        return write_prometheus_rule(arguments.root.resolve())
    return validate(arguments.root.resolve(), arguments.only).print()


if __name__ == "__main__":
    sys.exit(main())
