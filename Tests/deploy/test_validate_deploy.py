"""Self-tests of the deployment validation (run by scripts/validate-deploy.sh).

Each test copies the deployment files into a temporary tree, breaks one thing the way a
careless edit would, and requires deploy/validate/validate_deploy.py to reject it and name the
file; the untouched copy must pass. The container scripts are exercised for real: the
health check against live HTTP listeners, the entrypoint by exec'ing a program.
"""
from __future__ import annotations

import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VALIDATOR = REPO / "deploy/validate/validate_deploy.py"


def copy_tree(destination: Path) -> None:
    shutil.copy2(REPO / "docker-compose.yml", destination / "docker-compose.yml")
    shutil.copy2(REPO / "Package.swift", destination / "Package.swift")
    shutil.copytree(REPO / "deploy", destination / "deploy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Target folders named by Package.swift, so the build-context check sees them exist.
    for folder in ("Shared", "Services", "Tests", "Benchmarks"):
        (destination / folder).mkdir(exist_ok=True)
    # The web console's files, which the image copies in.
    (destination / "Services/AuthGateway/Console").mkdir(parents=True, exist_ok=True)


class ValidatorTests(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="facegate-deploy-")
        self.root = Path(self._tmp.name)
        copy_tree(self.root)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def run_validator(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(VALIDATOR), "--root", str(self.root)],
                              capture_output=True, text=True, timeout=300)

    def edit(self, relative: str, old: str, new: str, count: int = 1) -> None:
        path = self.root / relative
        text = path.read_text()
        self.assertIn(old, text, f"test setup: {old!r} not found in {relative}")
        path.write_text(text.replace(old, new, count))

    def assert_rejected(self, failing_file: str, message: str) -> None:
        result = self.run_validator()
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 1, f"validation accepted the broken copy:\n{output}")
        self.assertRegex(output, rf"(?m)^FAIL  {re.escape(failing_file)}  \(", output)
        self.assertIn(message, output)

    # -- the baseline -----------------------------------------------------------------------

    def test_untouched_files_pass(self) -> None:
        result = self.run_validator()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn("FAIL", result.stdout)
        self.assertRegex(result.stdout, r"validate-deploy: \d+ files checked, 0 with problems")

    # -- Kubernetes -------------------------------------------------------------------------

    def test_misspelled_kubernetes_field_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", "revisionHistoryLimit: 5", "revisionHistoryLimitt: 5")
        self.assert_rejected("deploy/k8s/base/auth-gateway.yaml", "'revisionHistoryLimitt' was unexpected")

    def test_wrong_kubernetes_field_type_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", "  replicas: 2\n", "  replicas: two\n")
        self.assert_rejected("deploy/k8s/base/ctid-verifier.yaml", "'two' is not of type 'integer'")

    def test_unknown_environment_variable_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", "name: FACEGATE_SEALING_KEY", "name: FACEGATE_SEAL_KEY")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "FACEGATE_SEAL_KEY is not a variable of the runtime contract")

    def test_probe_on_wrong_path_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", "path: /readyz", "path: /ready")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "readinessProbe must GET /readyz on the admin port")

    def test_malformed_object_is_reported_without_crashing(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", "      containers:", "      containerz:")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "contract checks skipped until the objects match their schemas")
        self.assertNotIn("Traceback", self.run_validator().stderr)

    def test_missing_kustomize_resource_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kustomization.yaml", "  - migrate-job.yaml", "  - migration-job.yaml")
        self.assert_rejected("deploy/k8s/base/kustomization.yaml", "resource migration-job.yaml does not exist")

    def test_service_selecting_no_pods_is_rejected(self) -> None:
        path = "deploy/k8s/base/matcher-worker.yaml"
        text = (self.root / path).read_text()
        service = text.index("kind: Service")
        text = text[:service] + text[service:].replace("app.kubernetes.io/name: matcher-worker",
                                                       "app.kubernetes.io/name: matcher", 2)
        (self.root / path).write_text(text)
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "Service/matcher-worker: selects no Deployment's pods")

    def test_ctid_private_key_missing_from_ctid_verifier_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", "name: FACEGATE_CTID_PRIVATE_KEY", "name: FACEGATE_CTID_SERIAL_TTL_SECONDS")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: required FACEGATE_CTID_PRIVATE_KEY is not set")

    def test_ctid_private_key_handed_to_the_gateway_is_rejected(self) -> None:
        # The public key's variable fed from the private key's Secret entry: the gateway would
        # hold the key that opens every institution key.
        self.edit("deploy/k8s/base/auth-gateway.yaml", "key: ctid-public-key", "key: ctid-private-key")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "secret key ctid-private-key is mapped to FACEGATE_CTID_PUBLIC_KEY")

    def test_ctid_private_key_given_to_kiosk_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", "            - name: FACEGATE_DATABASE_URL\n",
                  "            - name: FACEGATE_CTID_PRIVATE_KEY\n              valueFrom:\n                secretKeyRef:\n"
                  "                  name: facegate-secrets\n                  key: ctid-private-key\n"
                  "            - name: FACEGATE_DATABASE_URL\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "FACEGATE_CTID_PRIVATE_KEY does not belong to kiosk-orchestrator")

    def test_gateway_shard_count_differing_from_matchers_is_rejected(self) -> None:
        self.edit("deploy/k8s/sharded/kustomization.yaml", "name: FACEGATE_MATCHER_SHARDS\n                    value: \"2\"",
                  "name: FACEGATE_MATCHER_SHARDS\n                    value: \"1\"")
        self.assert_rejected("deploy/k8s/sharded (kubectl kustomize)",
                             "FACEGATE_MATCHER_SHARDS 1 differs from the matchers' MATCHER_SHARD_COUNT 2")

    def test_unknown_gallery_storage_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/matcher-worker.yaml", "value: float32", "value: float8")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "MATCHER_GALLERY_STORAGE=float8 is not one of float16|float32|int8")

    # -- KEDA -------------------------------------------------------------------------------

    def test_autoscaler_beyond_partitions_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/matcher-worker-scaledobject.yaml", "maxReplicaCount: 12", "maxReplicaCount: 24")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "maxReplicaCount 24 exceeds the 12 partitions of face.jobs.v1")

    def test_misspelled_scaler_field_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/matcher-worker-scaledobject.yaml", "lagThreshold:", "lagTreshold:")
        self.assert_rejected("deploy/k8s/base/matcher-worker-scaledobject.yaml", "lagTreshold")

    def test_shard_scaled_on_another_group_is_rejected(self) -> None:
        self.edit("deploy/k8s/sharded/matcher-worker-shard-1.yaml",
                  "consumerGroup: matcher-worker-shard-1-of-2", "consumerGroup: matcher-worker-shard-0-of-2")
        self.assert_rejected("deploy/k8s/sharded (kubectl kustomize)",
                             "consumerGroup matcher-worker-shard-0-of-2 but matcher-worker-shard-1 consumes as matcher-worker-shard-1-of-2")

    # -- Compose ----------------------------------------------------------------------------

    def test_compose_schema_violation_is_rejected(self) -> None:
        self.edit("docker-compose.yml", "condition: service_healthy", "condition: service_ready")
        self.assert_rejected("docker-compose.yml", "service_ready")

    def test_secret_given_to_the_wrong_service_is_rejected(self) -> None:
        self.edit("docker-compose.yml", "      SERVICE: matcher-worker\n",
                  "      SERVICE: matcher-worker\n      FACEGATE_SIGNING_KEY: ${FACEGATE_SIGNING_KEY}\n")
        self.assert_rejected("docker-compose.yml", "FACEGATE_SIGNING_KEY does not belong to matcher-worker")

    def test_ctid_private_key_given_to_the_gateway_is_rejected(self) -> None:
        self.edit("docker-compose.yml", "      SERVICE: auth-gateway\n",
                  "      SERVICE: auth-gateway\n      FACEGATE_CTID_PRIVATE_KEY: ${FACEGATE_CTID_PRIVATE_KEY}\n")
        self.assert_rejected("docker-compose.yml", "FACEGATE_CTID_PRIVATE_KEY does not belong to auth-gateway")

    def test_gateway_without_ctid_public_key_is_rejected(self) -> None:
        path = self.root / "docker-compose.yml"
        path.write_text(re.sub(r"\n *FACEGATE_CTID_PUBLIC_KEY: [^\n]*", "", path.read_text()))
        self.assert_rejected("docker-compose.yml", "services.auth-gateway: required FACEGATE_CTID_PUBLIC_KEY is not set")

    def test_ctid_key_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "FACEGATE_CTID_PUBLIC_KEY=\n", "")
        self.assert_rejected("deploy/compose.env.example", "FACEGATE_CTID_PUBLIC_KEY is required by docker-compose.yml")

    def test_required_secret_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "FACEGATE_SEALING_KEY=\n", "")
        self.assert_rejected("deploy/compose.env.example", "FACEGATE_SEALING_KEY is required by docker-compose.yml")

    # -- Dockerfile -------------------------------------------------------------------------

    def test_dockerfile_running_as_root_is_rejected(self) -> None:
        self.edit("deploy/docker/Dockerfile", "USER 10001:10001\n", "")
        self.assert_rejected("deploy/docker/Dockerfile", "final stage has no USER")

    def test_dockerfile_latest_base_image_is_rejected(self) -> None:
        self.edit("deploy/docker/Dockerfile", "FROM debian:bookworm-slim AS runtime", "FROM debian:latest AS runtime")
        self.assert_rejected("deploy/docker/Dockerfile", "uses the latest tag")

    def test_dockerfile_without_healthcheck_is_rejected(self) -> None:
        path = self.root / "deploy/docker/Dockerfile"
        path.write_text(re.sub(r"HEALTHCHECK [^\n]*\\\n[^\n]*\n", "", path.read_text()))
        self.assert_rejected("deploy/docker/Dockerfile", "final stage has no HEALTHCHECK")

    def test_hadolint_finding_is_rejected(self) -> None:
        self.edit("deploy/docker/Dockerfile", "apt-get install -y --no-install-recommends \\\n      ca-certificates",
                  "apt-get install -y \\\n      ca-certificates")
        self.assert_rejected("deploy/docker/Dockerfile", "DL3015")

    def test_copy_source_excluded_from_context_is_rejected(self) -> None:
        self.edit("deploy/docker/Dockerfile.dockerignore", "!deploy/docker/healthcheck.sh\n", "")
        self.assert_rejected("deploy/docker/Dockerfile", "COPY source deploy/docker/healthcheck.sh is excluded")

    # -- topics -----------------------------------------------------------------------------

    def test_topic_with_other_partitions_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/files/create-topics.sh", "face.jobs.v1                      12",
                  "face.jobs.v1                       8")
        self.assert_rejected("deploy/k8s/base/files/create-topics.sh",
                             "topic face.jobs.v1 has 8 partitions, the contract says 12")


class _Handler(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        code = self.status if self.path == "/healthz" else 404
        body = b"{}"
        try:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the health check hangs up once it has read the status line

    def log_message(self, *arguments: object) -> None:
        pass


class ContainerScriptTests(unittest.TestCase):
    healthcheck = REPO / "deploy/docker/healthcheck.sh"
    entrypoint = REPO / "deploy/docker/entrypoint.sh"

    def serve(self, status: int) -> int:
        handler = type("Handler", (_Handler,), {"status": status})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server.server_address[1]

    def run_script(self, script: Path, env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return subprocess.run(["bash", str(script), *arguments], env={**base, **env},
                              capture_output=True, text=True, timeout=30)

    def test_healthcheck_passes_on_200(self) -> None:
        port = self.serve(200)
        result = self.run_script(self.healthcheck, {"SERVICE": "matcher-worker", "FACEGATE_ADMIN_PORT": str(port)})
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_healthcheck_fails_on_503(self) -> None:
        port = self.serve(503)
        result = self.run_script(self.healthcheck, {"SERVICE": "auth-gateway", "FACEGATE_ADMIN_PORT": str(port)})
        self.assertEqual(result.returncode, 1)
        self.assertIn("503", result.stderr)

    def test_healthcheck_fails_without_listener(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            closed_port = probe.getsockname()[1]
        result = self.run_script(self.healthcheck, {"SERVICE": "ctid-verifier", "FACEGATE_ADMIN_PORT": str(closed_port)})
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot connect", result.stderr)

    def test_healthcheck_rejects_unknown_service(self) -> None:
        result = self.run_script(self.healthcheck, {"SERVICE": "gateway"})
        self.assertEqual(result.returncode, 1)

    def test_entrypoint_execs_the_selected_executable_with_arguments(self) -> None:
        with tempfile.TemporaryDirectory() as bin_dir:
            program = Path(bin_dir) / "facegate"
            program.write_text('#!/bin/bash\necho "pid=$$ args=$*"\n')
            program.chmod(0o755)
            result = subprocess.run(
                ["bash", "-c", 'echo "shell=$$"; exec bash "$0" migrate --dry-run', str(self.entrypoint)],
                env={"PATH": os.environ.get("PATH", ""), "SERVICE": "facegate", "SERVICE_BIN_DIR": bin_dir},
                capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        shell_pid = re.search(r"shell=(\d+)", result.stdout).group(1)
        self.assertIn("args=migrate --dry-run", result.stdout)
        # exec all the way down: the service keeps the container's PID and receives its signals.
        self.assertIn(f"pid={shell_pid} ", result.stdout)

    def test_entrypoint_refuses_unknown_or_missing_service(self) -> None:
        for value in ("", "matcher", "auth-gateway matcher-worker", "../bin/sh"):
            result = self.run_script(self.entrypoint, {"SERVICE": value})
            self.assertEqual(result.returncode, 64, value)
            self.assertIn("must be one of", result.stderr)


if __name__ == "__main__":
    unittest.main()
