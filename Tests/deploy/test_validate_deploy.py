"""Self-tests of the deployment validation (run by scripts/validate-deploy.sh).

Each test copies the deployment files into a temporary tree, breaks one thing the way a
careless edit would, and requires deploy/validate/validate_deploy.py to reject it and name the
file; the untouched copy must pass (the command itself, as scripts/validate-deploy.sh runs it).
The broken copies are validated in this process (validate_deploy.validate) and for the file or
rendered layout the test names only, as the command's --only does: every check of each of a
hundred copies, the kustomize renders above all, took minutes.
test_in_process_validation_prints_what_the_command_prints holds that way to the command's output.
The container scripts are exercised for real: the health check against live HTTP listeners, the
entrypoint by exec'ing a program, the database role-password script's refusals, and the compose
env generator.
"""
from __future__ import annotations

import base64
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
sys.path.insert(0, str(VALIDATOR.parent))
import validate_deploy  # noqa: E402


COMPOSE = "docker-compose.yml"


def copy_tree(destination: Path) -> None:
    shutil.copy2(REPO / "Package.swift", destination / "Package.swift")
    shutil.copy2(REPO / COMPOSE, destination / COMPOSE)
    shutil.copytree(REPO / "deploy", destination / "deploy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Target folders named by Package.swift, so the build-context check sees them exist. Shared/ and Services/ are
    # the repository's own (read for the metric names the alert rules use, and the console files the image copies
    # in), linked rather than copied: no test edits them, and copying their sources into each of ~170 copies cost
    # more system time than the tests themselves.
    for folder in ("Tests", "Benchmarks"):
        (destination / folder).mkdir(exist_ok=True)
    for folder in ("Shared", "Services"):
        (destination / folder).symlink_to(REPO / folder, target_is_directory=True)


class ValidatorTests(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="facegate-deploy-")
        self.root = Path(self._tmp.name)
        copy_tree(self.root)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def run_command(self) -> subprocess.CompletedProcess[str]:
        """The validator as scripts/validate-deploy.sh runs it, on the copy."""
        return subprocess.run([sys.executable, str(VALIDATOR), "--root", str(self.root)],
                              capture_output=True, text=True, timeout=300)

    def run_validator(self, *only: str) -> subprocess.CompletedProcess[str]:
        """The validation of the copy in this process, of the named files (as printed) or of all when
        none are named: what the command prints and its exit status (a crash is an error of the test)."""
        lines, status = validate_deploy.validate(self.root, only or None).lines()
        return subprocess.CompletedProcess([str(VALIDATOR), "--root", str(self.root)], status, "\n".join(lines) + "\n", "")

    def edit(self, relative: str, old: str, new: str, count: int = 1) -> None:
        path = self.root / relative
        text = path.read_text()
        self.assertIn(old, text, f"test setup: {old!r} not found in {relative}")
        path.write_text(text.replace(old, new, count))

    def assert_rejected(self, failing_file: str, message: str, *also: str, everything: bool = False) -> str:
        """The copy fails validation, failing_file among the files with problems and message said.
        Checks failing_file (and the files or layouts in also), or every file with everything.
        Returns what was printed."""
        result = self.run_validator() if everything else self.run_validator(failing_file, *also)
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 1, f"validation accepted the broken copy:\n{output}")
        self.assertRegex(output, rf"(?m)^FAIL  {re.escape(failing_file)}  \(", output)
        self.assertIn(message, output)
        return output

    # -- the baseline -----------------------------------------------------------------------

    def test_untouched_files_pass(self) -> None:
        result = self.run_command()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn("FAIL", result.stdout)
        self.assertRegex(result.stdout, r"validate-deploy: \d+ files checked, 0 with problems")

    def test_in_process_validation_prints_what_the_command_prints(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", "path: /readyz", "path: /ready")
        self.edit(COMPOSE, "condition: service_healthy", "condition: service_ready")
        command = self.run_command()
        self.assertEqual(command.returncode, 1, command.stdout + command.stderr)
        self.assertEqual(command.stderr, "")
        everything = self.run_validator()
        self.assertEqual((everything.returncode, everything.stdout), (command.returncode, command.stdout))
        # Asked for some files: their lines of the whole output (in its order), counted alone.
        blocks: dict[str, list[str]] = {}
        for line in command.stdout.splitlines()[:-1]:
            if not line.startswith(" "):
                name = line[6:line.rindex("  (")]
                blocks[name] = []
            blocks[name].append(line)
        asked = ["deploy/k8s (kubectl kustomize)", "deploy/k8s/sharded (kubectl kustomize)", COMPOSE,
                 "deploy/compose.env.example", "deploy/docker/Dockerfile", "deploy/k8s/base/kiosk-orchestrator.yaml"]
        self.assertLessEqual(set(asked), set(blocks))
        scoped = self.run_validator(*reversed(asked))
        expected = [line for name in blocks if name in asked for line in blocks[name]]
        self.assertEqual(scoped.stdout.splitlines(),
                         expected + [f"validate-deploy: {len(asked)} files checked, 3 with problems"])
        self.assertEqual(scoped.returncode, 1)
        self.assertEqual(self.run_validator("deploy/docker/Dockerfile").returncode, 0)

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
        # Every file checked: no check may crash on the malformed object.
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "contract checks skipped until the objects match their schemas",
                             everything=True)

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

    # -- message-signing keys (Kubernetes) --------------------------------------------------

    SERVICE_KEY_ENTRY = ("            - name: FACEGATE_SERVICE_KEY\n              valueFrom:\n                secretKeyRef:\n"
                         "                  name: facegate-secrets\n                  key: service-key-{}\n")
    PUBLIC_KEYS_ENTRY = ("            - name: FACEGATE_SERVICE_PUBLIC_KEYS\n              valueFrom:\n                configMapKeyRef:\n"
                         "                  name: facegate-service-public-keys\n                  key: FACEGATE_SERVICE_PUBLIC_KEYS\n")

    def test_deployment_without_its_service_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", self.SERVICE_KEY_ENTRY.format("kiosk-orchestrator"), "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/kiosk-orchestrator/kiosk-orchestrator: required FACEGATE_SERVICE_KEY is not set")

    def test_deployment_without_the_public_keys_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", self.PUBLIC_KEYS_ENTRY, "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: required FACEGATE_SERVICE_PUBLIC_KEYS is not set")

    def test_deployment_with_another_services_key_is_rejected(self) -> None:
        # The gateway signing as a matcher: it could answer face jobs with any result.
        self.edit("deploy/k8s/base/auth-gateway.yaml", "key: service-key-auth-gateway", "key: service-key-matcher-worker")
        output = self.assert_rejected("deploy/k8s (kubectl kustomize)",
                                      "Deployment/auth-gateway/auth-gateway: reads secret key service-key-matcher-worker,"
                                      " matcher-worker's message-signing key, as FACEGATE_SERVICE_KEY; it runs auth-gateway")
        self.assertIn("Deployment/auth-gateway/auth-gateway: FACEGATE_SERVICE_KEY comes from Secret facegate-secrets key"
                      " service-key-matcher-worker, not Secret facegate-secrets key service-key-auth-gateway", output)

    def test_matcher_shard_with_another_services_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/sharded/matcher-worker-shard-1.yaml", "key: service-key-matcher-worker",
                  "key: service-key-ctid-verifier")
        self.assert_rejected("deploy/k8s/sharded (kubectl kustomize)",
                             "Deployment/matcher-worker-shard-1/matcher-worker: reads secret key service-key-ctid-verifier,"
                             " ctid-verifier's message-signing key")

    def test_second_services_key_under_another_name_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", self.PUBLIC_KEYS_ENTRY,
                  self.PUBLIC_KEYS_ENTRY + self.SERVICE_KEY_ENTRY.format("auth-gateway").replace(
                      "name: FACEGATE_SERVICE_KEY\n", "name: GATEWAY_SERVICE_KEY\n"))
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/kiosk-orchestrator/kiosk-orchestrator: reads secret key service-key-auth-gateway,"
                             " auth-gateway's message-signing key, as GATEWAY_SERVICE_KEY; it runs kiosk-orchestrator")

    def test_service_key_literal_in_a_deployment_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", self.SERVICE_KEY_ENTRY.format("ctid-verifier"),
                  "            - name: FACEGATE_SERVICE_KEY\n              value: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: FACEGATE_SERVICE_KEY comes from a value written into"
                             " the manifest, not Secret facegate-secrets key service-key-ctid-verifier")

    def test_migrate_job_with_a_service_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/migrate-job.yaml", "                  key: migrator-database-url\n          resources:",
                  "                  key: migrator-database-url\n" + self.SERVICE_KEY_ENTRY.format("auth-gateway") + "          resources:")
        output = self.assert_rejected("deploy/k8s (kubectl kustomize)",
                                      "Job/facegate-migrate/migrate: reads secret key service-key-auth-gateway,"
                                      " auth-gateway's message-signing key, as FACEGATE_SERVICE_KEY; it runs facegate")
        self.assertIn("Job/facegate-migrate/migrate: FACEGATE_SERVICE_KEY does not belong to facegate", output)

    def test_whole_secret_mounted_into_a_pod_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kafka-topics-job.yaml", "      volumes:\n",
                  "      volumes:\n        - name: keys\n          secret:\n            secretName: facegate-secrets\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Job/facegate-kafka-topics: volume keys mounts all of facegate-secrets, every service's"
                             " message-signing key included")

    def test_service_key_in_the_shared_config_is_rejected(self) -> None:
        path = self.root / "deploy/k8s/base/config.env"
        path.write_text(path.read_text() + "FACEGATE_SERVICE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
        output = self.assert_rejected("deploy/k8s/base/config.env", "FACEGATE_SERVICE_KEY is a service's secret seed",
                                      "deploy/k8s (kubectl kustomize)")
        self.assertRegex(output, r"(?m)^FAIL  deploy/k8s \(kubectl kustomize\)  \(")
        self.assertIn("ConfigMap/facegate-config-", output)

    def test_public_key_list_without_a_service_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/service-public-keys.env", ",kiosk-orchestrator=CHANGE-ME", "")
        self.assert_rejected("deploy/k8s/base/service-public-keys.env",
                             "FACEGATE_SERVICE_PUBLIC_KEYS does not list kiosk-orchestrator, which then refuses to start")

    def test_malformed_public_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/service-public-keys.env", "ctid-verifier=CHANGE-ME", "ctid-verifier=c2hvcnQ=")
        self.assert_rejected("deploy/k8s/base/service-public-keys.env",
                             "FACEGATE_SERVICE_PUBLIC_KEYS ctid-verifier's key is not base64 of a 32-byte Ed25519 public key")

    def test_one_public_key_for_two_services_is_rejected(self) -> None:
        key = "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik="
        self.edit("deploy/k8s/base/service-public-keys.env", "auth-gateway=CHANGE-ME,matcher-worker=CHANGE-ME",
                  f"auth-gateway={key},matcher-worker={key}")
        self.assert_rejected("deploy/k8s/base/service-public-keys.env",
                             "one key is listed for auth-gateway, matcher-worker")

    def test_services_given_different_public_keys_are_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", self.PUBLIC_KEYS_ENTRY,
                  "            - name: FACEGATE_SERVICE_PUBLIC_KEYS\n              value: auth-gateway=O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=,"
                  "matcher-worker=CHANGE-ME,ctid-verifier=CHANGE-ME,kiosk-orchestrator=CHANGE-ME\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "the services are given different FACEGATE_SERVICE_PUBLIC_KEYS")

    def test_example_secret_without_a_service_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/secret.example.yaml", "  service-key-ctid-verifier: \"base64 of ctid-verifier's 32-byte Ed25519 seed\"\n", "")
        self.edit("deploy/k8s/secret.example.yaml", "#   service-key-ctid-verifier       FACEGATE_SERVICE_KEY of ctid-verifier only\n", "")
        self.assert_rejected("deploy/k8s/secret.example.yaml",
                             "service-key-ctid-verifier is missing: ctid-verifier's message-signing key (FACEGATE_SERVICE_KEY)")

    # -- token keys and the audit key (Kubernetes) -------------------------------------------

    KIOSK_KEY_ENTRY = ("            - name: FACEGATE_KIOSK_SIGNING_KEY\n              valueFrom:\n                secretKeyRef:\n"
                       "                  name: facegate-secrets\n                  key: kiosk-signing-key\n")
    KIOSK_PUBLIC_ENTRY = ("            - name: FACEGATE_KIOSK_PUBLIC_KEYS\n              valueFrom:\n                configMapKeyRef:\n"
                          "                  name: facegate-kiosk-public-keys\n                  key: FACEGATE_KIOSK_PUBLIC_KEYS\n")
    AUDIT_KEY_ENTRY = ("            - name: FACEGATE_AUDIT_KEY\n              valueFrom:\n                secretKeyRef:\n"
                       "                  name: facegate-secrets\n                  key: audit-key\n")
    PREVIOUS_AUDIT_ENTRY = ("            - name: FACEGATE_PREVIOUS_AUDIT_KEYS\n              valueFrom:\n                secretKeyRef:\n"
                            "                  name: facegate-secrets\n                  key: previous-audit-keys\n"
                            "                  optional: true\n")

    def test_kiosk_with_the_gateways_signing_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", self.KIOSK_KEY_ENTRY,
                  self.KIOSK_KEY_ENTRY.replace("FACEGATE_KIOSK_SIGNING_KEY", "FACEGATE_SIGNING_KEY").replace("kiosk-signing-key", "signing-key"))
        output = self.assert_rejected("deploy/k8s (kubectl kustomize)",
                                      "Deployment/kiosk-orchestrator/kiosk-orchestrator: FACEGATE_SIGNING_KEY does not belong to"
                                      " kiosk-orchestrator")
        self.assertIn("Deployment/kiosk-orchestrator/kiosk-orchestrator: required FACEGATE_KIOSK_SIGNING_KEY is not set", output)
        self.assertIn("Deployment/kiosk-orchestrator/kiosk-orchestrator: reads secret key signing-key (FACEGATE_SIGNING_KEY,"
                      " the gateway's token key) as FACEGATE_SIGNING_KEY; it runs kiosk-orchestrator, and only auth-gateway gets it", output)

    def test_kiosk_reading_the_gateways_key_under_its_own_name_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", "key: kiosk-signing-key", "key: signing-key")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/kiosk-orchestrator/kiosk-orchestrator: reads secret key signing-key (FACEGATE_SIGNING_KEY,"
                             " the gateway's token key) as FACEGATE_KIOSK_SIGNING_KEY; it runs kiosk-orchestrator, and only auth-gateway gets it")

    def test_gateway_with_the_kiosk_signing_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", self.KIOSK_PUBLIC_ENTRY, self.KIOSK_PUBLIC_ENTRY + self.KIOSK_KEY_ENTRY)
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/auth-gateway/auth-gateway: FACEGATE_KIOSK_SIGNING_KEY does not belong to auth-gateway")

    def test_kiosk_public_keys_given_to_another_service_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", self.AUDIT_KEY_ENTRY, self.AUDIT_KEY_ENTRY + self.KIOSK_PUBLIC_ENTRY)
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: FACEGATE_KIOSK_PUBLIC_KEYS does not belong to ctid-verifier")

    def test_gateway_without_the_kiosk_public_keys_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", self.KIOSK_PUBLIC_ENTRY, "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/auth-gateway/auth-gateway: required FACEGATE_KIOSK_PUBLIC_KEYS is not set")

    def test_malformed_kiosk_public_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-public-keys.env", "FACEGATE_KIOSK_PUBLIC_KEYS=CHANGE-ME",
                  "FACEGATE_KIOSK_PUBLIC_KEYS=O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=,c2hvcnQ=")
        self.assert_rejected("deploy/k8s/base/kiosk-public-keys.env",
                             "FACEGATE_KIOSK_PUBLIC_KEYS entry 'c2hvcnQ=' is not base64 of a 32-byte Ed25519 public key")

    def test_audit_writer_without_the_audit_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", self.AUDIT_KEY_ENTRY, "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: required FACEGATE_AUDIT_KEY is not set")

    def test_audit_key_given_to_a_matcher_shard_is_rejected(self) -> None:
        self.edit("deploy/k8s/sharded/matcher-worker-shard-0.yaml", "            - name: FACEGATE_SEALING_KEY\n",
                  self.AUDIT_KEY_ENTRY + "            - name: FACEGATE_SEALING_KEY\n")
        output = self.assert_rejected("deploy/k8s/sharded (kubectl kustomize)",
                                      "Deployment/matcher-worker-shard-0/matcher-worker: FACEGATE_AUDIT_KEY does not belong to"
                                      " matcher-worker")
        self.assertIn("Deployment/matcher-worker-shard-0/matcher-worker: reads secret key audit-key (FACEGATE_AUDIT_KEY, the audit"
                      " chain key) as FACEGATE_AUDIT_KEY; it runs matcher-worker, and only auth-gateway, ctid-verifier,"
                      " kiosk-orchestrator get it", output)

    def test_audit_key_under_another_name_in_the_migrate_job_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/migrate-job.yaml", "                  key: migrator-database-url\n          resources:",
                  "                  key: migrator-database-url\n"
                  + self.AUDIT_KEY_ENTRY.replace("name: FACEGATE_AUDIT_KEY", "name: CHAIN_KEY") + "          resources:")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Job/facegate-migrate/migrate: reads secret key audit-key (FACEGATE_AUDIT_KEY, the audit chain key)"
                             " as CHAIN_KEY; it runs facegate, and only auth-gateway, ctid-verifier, kiosk-orchestrator get it")

    def test_audit_key_mounted_into_the_matcher_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/matcher-worker.yaml", "      volumes:\n",
                  "      volumes:\n        - name: chain\n          secret:\n            secretName: facegate-secrets\n"
                  "            items:\n              - key: audit-key\n                path: audit-key\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/matcher-worker: volume chain mounts audit-key (FACEGATE_AUDIT_KEY) into a pod running"
                             " matcher-worker; only auth-gateway, ctid-verifier, kiosk-orchestrator get it")

    def test_audit_writers_with_different_keys_are_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", self.AUDIT_KEY_ENTRY,
                  self.AUDIT_KEY_ENTRY.replace("name: facegate-secrets", "name: kiosk-audit"))
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "the audit writers are given different FACEGATE_AUDIT_KEY")

    def test_previous_audit_keys_on_one_writer_missing_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml", self.PREVIOUS_AUDIT_ENTRY, "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "missing on Deployment/kiosk-orchestrator/kiosk-orchestrator): set it on all three alike")

    def test_audit_key_written_into_a_deployment_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", self.AUDIT_KEY_ENTRY,
                  "            - name: FACEGATE_AUDIT_KEY\n              value: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/auth-gateway/auth-gateway: FACEGATE_AUDIT_KEY (the audit chain key) comes from a value"
                             " written into the manifest; a secret is read from a Secret (secretKeyRef)")

    def test_audit_key_in_the_shared_config_is_rejected(self) -> None:
        path = self.root / "deploy/k8s/base/config.env"
        path.write_text(path.read_text() + "FACEGATE_AUDIT_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
        self.assert_rejected("deploy/k8s/base/config.env",
                             "FACEGATE_AUDIT_KEY is a secret (the audit chain key): it belongs in the Secret facegate-secrets")

    def test_required_audit_key_made_optional_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ctid-verifier.yaml", self.AUDIT_KEY_ENTRY,
                  self.AUDIT_KEY_ENTRY + "                  optional: true\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: FACEGATE_AUDIT_KEY is optional; ctid-verifier refuses to start"
                             " without it")

    def test_example_secret_without_the_audit_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/secret.example.yaml", '  audit-key: "base64 of 32 random bytes"\n', "")
        self.assert_rejected("deploy/k8s/secret.example.yaml", "audit-key is missing: FACEGATE_AUDIT_KEY (the audit chain key)")

    # -- Kafka TLS/SASL (the component deploy/k8s/kafka-tls) --------------------------------

    TLS = "deploy/k8s/kafka-tls/kustomization.yaml"
    TLS_LAYOUT = "deploy/k8s + deploy/k8s/kafka-tls (kubectl kustomize)"
    TLS_SHARDED = "deploy/k8s/sharded + deploy/k8s/kafka-tls (kubectl kustomize)"

    def test_kafka_password_written_into_the_component_is_rejected(self) -> None:
        self.edit(self.TLS, "                    valueFrom:\n                      secretKeyRef:\n"
                  "                        name: facegate-secrets\n                        key: kafka-password-auth-gateway\n",
                  "                    value: hunter2\n")
        self.assert_rejected(self.TLS_LAYOUT,
                             "Deployment/auth-gateway/auth-gateway: FACEGATE_KAFKA_SASL_PASSWORD (a Kafka SASL password) comes from"
                             " a value written into the manifest")

    def test_kafka_password_of_another_service_is_rejected(self) -> None:
        self.edit(self.TLS, "key: kafka-password-ctid-verifier", "key: kafka-password-auth-gateway")
        self.assert_rejected(self.TLS_LAYOUT,
                             "Deployment/ctid-verifier/ctid-verifier: reads secret key kafka-password-auth-gateway, auth-gateway's"
                             " Kafka SASL password, as FACEGATE_KAFKA_SASL_PASSWORD; it runs ctid-verifier")

    def test_unknown_kafka_security_protocol_is_rejected(self) -> None:
        self.edit(self.TLS, "value: sasl_ssl", "value: sasl_tls")
        self.assert_rejected(self.TLS_LAYOUT,
                             "Deployment/auth-gateway/auth-gateway: FACEGATE_KAFKA_SECURITY_PROTOCOL=sasl_tls is not one of"
                             " plaintext|sasl_plaintext|sasl_ssl|ssl")

    def test_sasl_without_a_password_is_rejected(self) -> None:
        self.edit(self.TLS, "                  - name: FACEGATE_KAFKA_SASL_PASSWORD\n                    valueFrom:\n"
                  "                      secretKeyRef:\n                        name: facegate-secrets\n"
                  "                        key: kafka-password-matcher-worker\n", "")
        self.assert_rejected(self.TLS_SHARDED,
                             "Deployment/matcher-worker-shard-1/matcher-worker: FACEGATE_KAFKA_SECURITY_PROTOCOL=sasl_ssl needs"
                             " FACEGATE_KAFKA_SASL_PASSWORD")

    def test_kafka_ca_outside_any_mount_is_rejected(self) -> None:
        self.edit(self.TLS, "value: /etc/facegate/kafka/ca.crt", "value: /etc/kafka/ca.crt")
        self.assert_rejected(self.TLS_LAYOUT,
                             "Deployment/auth-gateway/auth-gateway: FACEGATE_KAFKA_SSL_CA_LOCATION=/etc/kafka/ca.crt is not inside"
                             " a mounted volume")

    def test_autoscaler_without_kafka_credentials_is_rejected(self) -> None:
        self.edit(self.TLS, "      - op: add\n        path: /spec/triggers/0/authenticationRef\n        value:\n"
                  "          name: facegate-kafka\n", "")
        self.assert_rejected(self.TLS_SHARDED,
                             "ScaledObject/matcher-worker-shard-0: the services use sasl_ssl, but the trigger has no authenticationRef")

    def test_topics_job_without_client_properties_is_rejected(self) -> None:
        self.edit(self.TLS, "                  - name: COMMAND_CONFIG\n                    value: /etc/facegate/kafka-admin/client.properties\n", "")
        self.assert_rejected(self.TLS_LAYOUT,
                             "Job/facegate-kafka-topics/kafka-topics: the services use sasl_ssl, but the topics script has no"
                             " COMMAND_CONFIG")

    def test_misspelled_trigger_authentication_parameter_is_rejected(self) -> None:
        self.edit("deploy/k8s/kafka-tls/keda-trigger-authentication.yaml", "parameter: username", "parameter: user")
        self.assert_rejected("deploy/k8s/kafka-tls/keda-trigger-authentication.yaml", "'user' is not one of")

    # -- metrics and alerts (deploy/prometheus/alerts.yml, the component deploy/k8s/monitoring) -

    ALERTS = "deploy/prometheus/alerts.yml"
    RULE = "deploy/k8s/monitoring/prometheus-rule.yaml"
    MONITOR = "deploy/k8s/monitoring/pod-monitor.yaml"
    MONITORING_LAYOUT = "deploy/k8s + deploy/k8s/monitoring (kubectl kustomize)"
    MONITORING_SHARDED = "deploy/k8s/sharded + deploy/k8s/monitoring (kubectl kustomize)"
    SERVICE_JOBS = "auth-gateway|matcher-worker|ctid-verifier|kiosk-orchestrator"

    def test_alert_without_for_is_rejected(self) -> None:
        self.edit(self.ALERTS, "expr: facegate_ready == 0\n        for: 2m\n", "expr: facegate_ready == 0\n")
        self.assert_rejected(self.ALERTS, "FaceGateNotReady: no for:")

    def test_alert_without_severity_is_rejected(self) -> None:
        self.edit(self.ALERTS, "labels:\n          severity: critical\n", "labels:\n          team: facegate\n")
        self.assert_rejected(self.ALERTS, "FaceGateDown: no labels.severity")

    def test_alert_without_summary_is_rejected(self) -> None:
        self.edit(self.ALERTS, 'summary: "{{ $labels.job }} answers', 'title: "{{ $labels.job }} answers')
        self.assert_rejected(self.ALERTS, "FaceGateHTTP5xx: no annotations.summary")

    def test_alert_without_runbook_is_rejected(self) -> None:
        self.edit(self.ALERTS, "          runbook: deploy/README.md#facegaterestarting\n", "")
        self.assert_rejected(self.ALERTS, "FaceGateRestarting: no annotations.runbook")

    def test_runbook_without_its_section_is_rejected(self) -> None:
        self.edit("deploy/README.md", "#### FaceGateDeadlineMisses\n", "#### Deadline misses\n")
        self.assert_rejected(self.ALERTS, "FaceGateDeadlineMisses: runbook deploy/README.md#facegatedeadlinemisses:"
                                          " deploy/README.md has no section #facegatedeadlinemisses")

    def test_rule_file_schema_violation_is_rejected(self) -> None:
        self.edit(self.ALERTS, "        annotations:\n", "        anotations:\n")
        self.assert_rejected(self.ALERTS, "'anotations' was unexpected")

    def test_alert_defined_twice_is_rejected(self) -> None:
        self.edit(self.ALERTS, "alert: FaceGateConsumerLagCritical", "alert: FaceGateConsumerLagHigh")
        self.assert_rejected(self.ALERTS, "FaceGateConsumerLagHigh is defined twice")

    def test_unparsable_expression_is_rejected(self) -> None:
        self.edit(self.ALERTS, "sum by (group, topic) (facegate_consumer_lag) > 100",
                  "sum by (group, topic) (facegate_consumer_lag > 100")
        self.assert_rejected(self.ALERTS, "FaceGateConsumerLagHigh: expr does not parse as PromQL: unclosed left parenthesis")

    def test_unknown_promql_function_is_rejected(self) -> None:
        self.edit(self.ALERTS, "expr: changes(process_start_time_seconds", "expr: restarts(process_start_time_seconds")
        self.assert_rejected(self.ALERTS, "FaceGateRestarting: expr does not parse as PromQL: unknown function with name 'restarts'")

    def test_rate_of_an_instant_vector_is_rejected(self) -> None:
        self.edit(self.ALERTS, 'rate(facegate_deadline_misses_total{side="requester"}[5m])',
                  'rate(facegate_deadline_misses_total{side="requester"})')
        self.assert_rejected(self.ALERTS, "FaceGateDeadlineMisses: expr does not parse as PromQL: expected type matrix"
                                          " in call to function 'rate', got vector")

    def test_dashboard_query_of_a_metric_nobody_registers_is_rejected(self) -> None:
        dashboard = "deploy/grafana/facegate.json"
        self.edit(dashboard, "facegate_consumer_lag)", "facegate_consumer_backlog)")
        self.assert_rejected(dashboard, "Consumer lag: facegate_consumer_backlog is not a metric the services register")

    def test_dashboard_query_that_is_not_promql_is_rejected(self) -> None:
        dashboard = "deploy/grafana/facegate.json"
        self.edit(dashboard, "increase(facegate_dead_letters_total[10m])", "increase(facegate_dead_letters_total)")
        self.assert_rejected(dashboard, "Dead letters (10 min): query does not parse as PromQL")

    def test_metric_the_services_do_not_register_is_rejected(self) -> None:
        self.edit(self.ALERTS, "facegate_db_pool_waiting > 0", "facegate_db_pool_queued > 0")
        self.assert_rejected(self.ALERTS, "FaceGateDatabasePoolSaturated: facegate_db_pool_queued is not a metric the services register")

    def test_histogram_read_by_its_family_name_is_rejected(self) -> None:
        # A histogram is exposed as _bucket, _sum and _count only.
        self.edit(self.ALERTS, 'expr: sum by (job, topic) (rate(facegate_deadline_misses_total{side="requester"}[5m])) > 0.1',
                  "expr: histogram_quantile(0.99, sum by (job, topic, le) (rate(facegate_job_seconds[5m]))) > 5")
        self.assert_rejected(self.ALERTS, "FaceGateDeadlineMisses: facegate_job_seconds is not a metric the services register")

    def test_annotation_printing_a_label_the_expression_drops_is_rejected(self) -> None:
        self.edit(self.ALERTS, 'summary: "Consumer group {{ $labels.group }}', 'summary: "Consumer {{ $labels.instance }}')
        self.assert_rejected(self.ALERTS, "FaceGateConsumerLagHigh: annotations.summary prints $labels.instance, which the"
                                          " expression does not keep (its result carries group, topic)")

    def test_process_metric_read_for_every_job_is_rejected(self) -> None:
        self.edit(self.ALERTS, f'process_start_time_seconds{{job=~"{self.SERVICE_JOBS}"}}[15m]', "process_start_time_seconds[15m]")
        self.assert_rejected(self.ALERTS, "FaceGateRestarting: process_start_time_seconds is exposed by every job Prometheus"
                                          " scrapes; select FaceGate's with job=~")

    def test_down_alert_leaving_out_a_service_is_rejected(self) -> None:
        self.edit(self.ALERTS, f'up{{job=~"{self.SERVICE_JOBS}"}}', 'up{job=~"auth-gateway|matcher-worker|ctid-verifier"}')
        self.assert_rejected(self.ALERTS, "no rule reads up for kiosk-orchestrator: those services are not watched")

    def test_prometheus_rule_differing_from_the_rule_file_is_rejected(self) -> None:
        self.edit(self.RULE, "(facegate_consumer_lag) > 1000", "(facegate_consumer_lag) > 5000")
        self.assert_rejected(self.RULE, "spec.groups differ from deploy/prometheus/alerts.yml (group facegate-kafka:"
                                        " FaceGateConsumerLagCritical: expr differs)")

    def test_rule_file_changed_without_the_prometheus_rule_is_rejected(self) -> None:
        self.edit(self.ALERTS, "        for: 2m\n", "        for: 3m\n")
        self.assert_rejected(self.RULE, "(group facegate-availability: FaceGateDown: for differs)")

    def test_written_prometheus_rule_follows_the_rule_file(self) -> None:
        command = [sys.executable, str(VALIDATOR), "--root", str(self.root), "--write-prometheus-rule"]
        shipped = (self.root / self.RULE).read_text()
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        self.assertIn("is up to date", result.stdout, result.stdout + result.stderr)
        self.assertEqual((self.root / self.RULE).read_text(), shipped)
        self.edit(self.ALERTS, "(facegate_consumer_lag) > 1000", "(facegate_consumer_lag) > 2000")
        self.edit(self.RULE, "  name: facegate\n", "  name: facegate\n  annotations:\n    kept: \"yes\"\n")
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        written = (self.root / self.RULE).read_text()
        self.assertIn("(facegate_consumer_lag) > 2000", written)
        self.assertIn('    kept: "yes"\n', written)  # the metadata above spec: is kept
        checked = self.run_validator(self.ALERTS, self.RULE)
        self.assertEqual(checked.returncode, 0, checked.stdout)

    def test_misspelled_prometheus_rule_field_is_rejected(self) -> None:
        self.edit(self.RULE, "          for: 2m\n", "          for_: 2m\n")
        self.assert_rejected(self.RULE, "'for_' was unexpected")

    def test_pod_monitor_on_the_public_port_is_rejected(self) -> None:
        self.edit(self.MONITOR, "    - port: admin\n", "    - port: http\n")
        self.assert_rejected(self.MONITORING_LAYOUT, "PodMonitor/facegate: port http is not the admin port of"
                                                     " Deployment/auth-gateway (9100, named admin)")

    def test_pod_monitor_without_job_label_is_rejected(self) -> None:
        self.edit(self.MONITOR, "  jobLabel: app.kubernetes.io/name\n", "")
        self.assert_rejected(self.MONITORING_SHARDED, "PodMonitor/facegate: the job label of Deployment/matcher-worker-shard-1's"
                                                      " pods would be 'facegate/facegate'; the alert rules expect 'matcher-worker'")

    def test_service_left_out_of_the_pod_monitor_is_rejected(self) -> None:
        self.edit(self.MONITOR, "          - kiosk-orchestrator\n", "")
        self.assert_rejected(self.MONITORING_SHARDED, "Deployment/kiosk-orchestrator: no PodMonitor selects its pods")

    def test_pod_monitor_selecting_the_jobs_is_rejected(self) -> None:
        self.edit(self.MONITOR, "        operator: In\n", "        operator: Exists\n")
        self.edit(self.MONITOR, "        values:\n          - auth-gateway\n          - matcher-worker\n          - ctid-verifier\n"
                                "          - kiosk-orchestrator\n", "")
        self.assert_rejected(self.MONITORING_LAYOUT, "PodMonitor/facegate: selects the pods of Job/facegate-migrate,"
                                                     " which serve no metrics")

    def test_pod_monitor_on_another_path_is_rejected(self) -> None:
        self.edit(self.MONITOR, "      path: /metrics\n", "      path: /metric\n")
        self.assert_rejected(self.MONITORING_LAYOUT, "PodMonitor/facegate: path /metric: the services serve their metrics at /metrics")

    def test_misspelled_pod_monitor_field_is_rejected(self) -> None:
        self.edit(self.MONITOR, "scrapeTimeout:", "scrapeTimout:")
        self.assert_rejected(self.MONITOR, "'scrapeTimout' was unexpected")

    def test_monitoring_component_missing_a_resource_is_rejected(self) -> None:
        self.edit("deploy/k8s/monitoring/kustomization.yaml", "  - pod-monitor.yaml", "  - podmonitor.yaml")
        self.assert_rejected("deploy/k8s/monitoring/kustomization.yaml", "resource podmonitor.yaml does not exist")

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

    # -- database roles (Kubernetes) --------------------------------------------------------

    def test_deployment_without_its_role_secret_is_rejected(self) -> None:
        # The migrations' owner URL handed to a service: it would own the schema it serves.
        self.edit("deploy/k8s/base/ctid-verifier.yaml", "key: ctid-database-url", "key: migrator-database-url")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/ctid-verifier/ctid-verifier: FACEGATE_DATABASE_URL comes from Secret facegate-secrets"
                             " key migrator-database-url, not Secret facegate-secrets key ctid-database-url")

    def test_deployment_without_a_database_url_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kiosk-orchestrator.yaml",
                  "            - name: FACEGATE_DATABASE_URL\n              valueFrom:\n                secretKeyRef:\n"
                  "                  name: facegate-secrets\n                  key: kiosk-database-url\n", "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Deployment/kiosk-orchestrator/kiosk-orchestrator: required FACEGATE_DATABASE_URL is not set")

    def test_database_url_written_into_a_deployment_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml",
                  "            - name: FACEGATE_DATABASE_URL\n              valueFrom:\n                secretKeyRef:\n"
                  "                  name: facegate-secrets\n                  key: gateway-database-url\n",
                  "            - name: FACEGATE_DATABASE_URL\n"
                  "              value: postgres://postgres:pw@db.example.internal:5432/facegate\n")
        output = self.assert_rejected("deploy/k8s (kubectl kustomize)",
                                      "FACEGATE_DATABASE_URL logs in as the superuser postgres; auth-gateway logs in as facegate_gateway")
        self.assertIn("FACEGATE_DATABASE_URL comes from a value written into the manifest", output)

    def test_matcher_shard_with_the_gateways_role_is_rejected(self) -> None:
        self.edit("deploy/k8s/sharded/matcher-worker-shard-1.yaml", "key: matcher-database-url", "key: gateway-database-url")
        self.assert_rejected("deploy/k8s/sharded (kubectl kustomize)",
                             "Deployment/matcher-worker-shard-1/matcher-worker: FACEGATE_DATABASE_URL comes from Secret"
                             " facegate-secrets key gateway-database-url, not Secret facegate-secrets key matcher-database-url")

    def test_role_password_setter_reading_another_key_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/migrate-job.yaml", "                  key: kiosk-database-url\n",
                  "                  key: ctid-database-url\n")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Job/facegate-migrate/role-passwords: DATABASE_URL_KIOSK comes from Secret facegate-secrets"
                             " key ctid-database-url, not Secret facegate-secrets key kiosk-database-url")

    def test_example_service_url_as_the_owner_is_rejected(self) -> None:
        self.edit("deploy/k8s/secret.example.yaml", "postgres://facegate_gateway:CHANGE-ME-TOO@",
                  "postgres://facegate_owner:CHANGE-ME-TOO@")
        self.assert_rejected("deploy/k8s/secret.example.yaml",
                             "gateway-database-url: the URL logs in as the schema owner facegate_owner")

    def test_example_migrations_as_a_superuser_are_rejected(self) -> None:
        self.edit("deploy/k8s/secret.example.yaml", "postgres://facegate_owner:CHANGE-ME@", "postgres://postgres:CHANGE-ME@")
        self.assert_rejected("deploy/k8s/secret.example.yaml",
                             "migrator-database-url: the URL logs in as the superuser postgres")

    def test_example_roles_sharing_a_password_are_rejected(self) -> None:
        self.edit("deploy/k8s/secret.example.yaml", "facegate_kiosk:CHANGE-ME-FIVE@", "facegate_kiosk:CHANGE-ME-FOUR@")
        self.assert_rejected("deploy/k8s/secret.example.yaml", "ctid-database-url, kiosk-database-url share one password")

    # -- network policies -------------------------------------------------------------------

    def test_worker_admitted_on_another_port_is_rejected(self) -> None:
        path = self.root / "deploy/k8s/base/network-policy.yaml"
        text = path.read_text()
        policy = text.index("name: workers-admin-ingress")
        path.write_text(text[:policy] + text[policy:].replace("port: admin", "port: 8080"))
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "NetworkPolicy/workers-admin-ingress: admits Deployment/matcher-worker on port 8080; it serves [9101]")

    def test_admin_port_open_to_anyone_is_rejected(self) -> None:
        path = self.root / "deploy/k8s/base/network-policy.yaml"
        text = path.read_text()
        policy = text.index("name: workers-admin-ingress")
        path.write_text(text[:policy] + re.sub(r"    - from:\n(?:        [^\n]*\n)+?      ports:", "    - ports:",
                                               text[policy:], count=1))
        self.assert_rejected("deploy/k8s/sharded (kubectl kustomize)",
                             "NetworkPolicy/workers-admin-ingress: admits the admin port of Deployment/matcher-worker-shard-0 from anywhere")

    def test_missing_default_deny_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/network-policy.yaml", "  policyTypes:\n    - Ingress\n    - Egress\n---",
                  "  policyTypes:\n    - Ingress\n---")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "no default-deny NetworkPolicy")

    def test_migrate_job_cut_off_from_postgres_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/network-policy.yaml", "kiosk-orchestrator, facegate-migrate]", "kiosk-orchestrator]")
        self.assert_rejected("deploy/k8s (kubectl kustomize)",
                             "Job/facegate-migrate: no NetworkPolicy lets it reach PostgreSQL (port 5432)")

    def test_public_api_without_tls_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ingress.yaml", "  tls:\n    - hosts:\n        - facegate.example.com\n      secretName: facegate-tls\n", "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "Ingress/auth-gateway: the host 'facegate.example.com' has no TLS")

    def test_no_ingress_to_the_gateway_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/kustomization.yaml", "  - ingress.yaml\n", "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "Deployment/auth-gateway: no Ingress routes to its Service")

    def test_ingress_host_other_than_the_public_url_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/ingress.yaml", "    - host: facegate.example.com", "    - host: api.example.com")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "the host 'api.example.com' is not FACEGATE_PUBLIC_URL's 'facegate.example.com'")

    def test_gateway_without_trusted_proxies_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", "            - name: FACEGATE_TRUSTED_PROXIES\n              value: 10.0.0.0/8\n", "")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "Deployment/auth-gateway: no FACEGATE_TRUSTED_PROXIES")

    def test_trusted_proxy_that_is_no_range_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/auth-gateway.yaml", "value: 10.0.0.0/8", "value: 10.0.0.0/8,ingress-nginx")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "FACEGATE_TRUSTED_PROXIES entry 'ingress-nginx' is not an address or a CIDR range")

    def test_public_port_open_to_every_pod_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/network-policy.yaml", "    - from:\n        - namespaceSelector:\n            matchLabels:\n"
                  "              kubernetes.io/metadata.name: ingress-nginx\n      ports:", "    - ports:")
        self.assert_rejected("deploy/k8s (kubectl kustomize)", "NetworkPolicy/auth-gateway-ingress: the gateway's public port is open to every pod")

    # -- Compose ----------------------------------------------------------------------------

    def test_compose_schema_violation_is_rejected(self) -> None:
        self.edit(COMPOSE, "condition: service_healthy", "condition: service_ready")
        self.assert_rejected(COMPOSE, "service_ready")

    def test_secret_given_to_the_wrong_service_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: matcher-worker\n",
                  "      SERVICE: matcher-worker\n      FACEGATE_SIGNING_KEY: ${FACEGATE_SIGNING_KEY}\n")
        self.assert_rejected(COMPOSE, "FACEGATE_SIGNING_KEY does not belong to matcher-worker")

    def test_ctid_private_key_given_to_the_gateway_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: auth-gateway\n",
                  "      SERVICE: auth-gateway\n      FACEGATE_CTID_PRIVATE_KEY: ${FACEGATE_CTID_PRIVATE_KEY}\n")
        self.assert_rejected(COMPOSE, "FACEGATE_CTID_PRIVATE_KEY does not belong to auth-gateway")

    def test_gateway_without_ctid_public_key_is_rejected(self) -> None:
        path = self.root / COMPOSE
        path.write_text(re.sub(r"\n *FACEGATE_CTID_PUBLIC_KEY: [^\n]*", "", path.read_text()))
        self.assert_rejected(COMPOSE, "services.auth-gateway: required FACEGATE_CTID_PUBLIC_KEY is not set")

    def test_ctid_key_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "FACEGATE_CTID_PUBLIC_KEY=\n", "")
        self.assert_rejected("deploy/compose.env.example", f"FACEGATE_CTID_PUBLIC_KEY is required by {COMPOSE}")

    def test_required_secret_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "FACEGATE_SEALING_KEY=\n", "")
        self.assert_rejected("deploy/compose.env.example", f"FACEGATE_SEALING_KEY is required by {COMPOSE}")

    def test_role_password_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "DB_PASSWORD_MATCHER=\n", "")
        self.assert_rejected("deploy/compose.env.example", f"DB_PASSWORD_MATCHER is required by {COMPOSE}")

    def test_compose_service_as_the_owner_is_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_DATABASE_URL: *kiosk-url", "FACEGATE_DATABASE_URL: *owner-url")
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_DATABASE_URL logs in as the schema owner"
                                      " facegate_owner; kiosk-orchestrator logs in as its own role facegate_kiosk")

    def test_compose_service_as_the_superuser_is_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_DATABASE_URL: *gateway-url",
                  "FACEGATE_DATABASE_URL: postgres://postgres:${POSTGRES_PASSWORD:?set it}@postgres:5432/facegate")
        output = self.assert_rejected(COMPOSE, "services.auth-gateway: FACEGATE_DATABASE_URL logs in as the superuser postgres")
        self.assertIn("services.auth-gateway: FACEGATE_DATABASE_URL carries the superuser's password POSTGRES_PASSWORD", output)

    def test_compose_roles_sharing_a_password_are_rejected(self) -> None:
        self.edit(COMPOSE, "facegate_matcher:${DB_PASSWORD_MATCHER:?set DB_PASSWORD_MATCHER in .env}",
                  "facegate_matcher:${DB_PASSWORD_GATEWAY:?set DB_PASSWORD_GATEWAY in .env}")
        self.assert_rejected(COMPOSE, "the roles facegate_gateway, facegate_matcher share the password DB_PASSWORD_GATEWAY")

    def test_compose_owner_made_the_superuser_is_rejected(self) -> None:
        self.edit(COMPOSE, "POSTGRES_USER: postgres", "POSTGRES_USER: facegate_owner")
        self.assert_rejected(COMPOSE, "services.postgres: POSTGRES_USER facegate_owner makes a FaceGate role the cluster's superuser")

    def test_compose_without_role_passwords_is_rejected(self) -> None:
        self.edit(COMPOSE, "./deploy/k8s/base/files/set-role-passwords.sh:/opt/facegate/set-role-passwords.sh:ro",
                  "./deploy/k8s/base/files/create-topics.sh:/opt/facegate/set-role-passwords:ro")
        self.assert_rejected(COMPOSE, "no one-shot runs set-role-passwords.sh")

    def test_service_starting_before_its_password_is_set_is_rejected(self) -> None:
        self.edit(COMPOSE, "  db-passwords:\n    condition: service_completed_successfully\n", "")
        self.assert_rejected(COMPOSE, "services.ctid-verifier: does not wait for its role's password (depends_on db-passwords)")

    def test_password_setter_given_another_url_is_rejected(self) -> None:
        self.edit(COMPOSE, "DATABASE_URL_CTID: *ctid-url", "DATABASE_URL_CTID: *kiosk-url")
        self.assert_rejected(COMPOSE, "services.db-passwords: DATABASE_URL_CTID logs in as facegate_kiosk,"
                                      " not ctid-verifier's own role facegate_ctid")

    def test_compose_build_context_outside_the_repository_is_rejected(self) -> None:
        self.edit(COMPOSE, "    context: .\n", "    context: ./deploy\n")
        self.assert_rejected(COMPOSE, "services.migrate: build context ./deploy is not the repository root")

    # -- message-signing keys (Compose) -----------------------------------------------------

    def test_compose_service_without_its_key_is_rejected(self) -> None:
        self.edit(COMPOSE, "      FACEGATE_SERVICE_KEY: ${FACEGATE_SERVICE_KEY_CTID_VERIFIER:?set FACEGATE_SERVICE_KEY_CTID_VERIFIER in .env}\n", "")
        self.assert_rejected(COMPOSE, "services.ctid-verifier: required FACEGATE_SERVICE_KEY is not set")

    def test_compose_service_without_the_public_keys_is_rejected(self) -> None:
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  matcher-worker:\n")
        path.write_text(text[:start] + re.sub(r"\n *FACEGATE_SERVICE_PUBLIC_KEYS: [^\n]*", "", text[start:], count=1))
        self.assert_rejected(COMPOSE, "services.matcher-worker: required FACEGATE_SERVICE_PUBLIC_KEYS is not set")

    def test_compose_service_with_another_services_key_is_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_SERVICE_KEY: ${FACEGATE_SERVICE_KEY_KIOSK_ORCHESTRATOR:?set FACEGATE_SERVICE_KEY_KIOSK_ORCHESTRATOR",
                  "FACEGATE_SERVICE_KEY: ${FACEGATE_SERVICE_KEY_AUTH_GATEWAY:?set FACEGATE_SERVICE_KEY_AUTH_GATEWAY")
        output = self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_SERVICE_KEY carries"
                                               " FACEGATE_SERVICE_KEY_AUTH_GATEWAY, auth-gateway's message-signing key;"
                                               " only auth-gateway gets it")
        self.assertIn("services.kiosk-orchestrator: FACEGATE_SERVICE_KEY comes from ${FACEGATE_SERVICE_KEY_AUTH_GATEWAY:?", output)

    def test_compose_second_services_key_under_another_name_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: matcher-worker\n",
                  "      SERVICE: matcher-worker\n      CTID_KEY: ${FACEGATE_SERVICE_KEY_CTID_VERIFIER}\n")
        self.assert_rejected(COMPOSE, "services.matcher-worker: CTID_KEY carries FACEGATE_SERVICE_KEY_CTID_VERIFIER,"
                                      " ctid-verifier's message-signing key; only ctid-verifier gets it")

    def test_compose_migrate_with_a_service_key_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: facegate\n",
                  "      SERVICE: facegate\n      FACEGATE_SERVICE_KEY: ${FACEGATE_SERVICE_KEY_AUTH_GATEWAY:?set it}\n")
        output = self.assert_rejected(COMPOSE, "services.migrate: FACEGATE_SERVICE_KEY carries FACEGATE_SERVICE_KEY_AUTH_GATEWAY,"
                                               " auth-gateway's message-signing key; only auth-gateway gets it")
        self.assertIn("services.migrate: FACEGATE_SERVICE_KEY does not belong to facegate", output)

    def test_compose_service_key_written_into_the_file_is_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_SERVICE_KEY: ${FACEGATE_SERVICE_KEY_MATCHER_WORKER:?set FACEGATE_SERVICE_KEY_MATCHER_WORKER in .env}",
                  "FACEGATE_SERVICE_KEY: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        self.assert_rejected(COMPOSE, "services.matcher-worker: FACEGATE_SERVICE_KEY comes from a value written into the compose"
                                      " file, not from matcher-worker's own ${FACEGATE_SERVICE_KEY_MATCHER_WORKER}")

    def test_compose_env_file_is_rejected(self) -> None:
        self.edit(COMPOSE, "  ctid-verifier:\n    <<: *facegate-image\n", "  ctid-verifier:\n    <<: *facegate-image\n    env_file: .env\n")
        self.assert_rejected(COMPOSE, "services.ctid-verifier: env_file hands every variable of the file")

    def test_compose_services_given_different_public_keys_are_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_SERVICE_PUBLIC_KEYS: ${FACEGATE_SERVICE_PUBLIC_KEYS:?set FACEGATE_SERVICE_PUBLIC_KEYS in .env}",
                  "FACEGATE_SERVICE_PUBLIC_KEYS: ${FACEGATE_CTID_PUBLIC_KEY:?set FACEGATE_CTID_PUBLIC_KEY in .env}")
        self.assert_rejected(COMPOSE, "the services are given different FACEGATE_SERVICE_PUBLIC_KEYS")

    def test_service_key_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "FACEGATE_SERVICE_KEY_MATCHER_WORKER=\n", "")
        self.assert_rejected("deploy/compose.env.example", f"FACEGATE_SERVICE_KEY_MATCHER_WORKER is required by {COMPOSE}")

    # -- token keys and the audit key (Compose) ----------------------------------------------

    def test_compose_kiosk_with_the_gateways_signing_key_is_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_KIOSK_SIGNING_KEY: ${FACEGATE_KIOSK_SIGNING_KEY:?set FACEGATE_KIOSK_SIGNING_KEY in .env}",
                  "FACEGATE_SIGNING_KEY: ${FACEGATE_SIGNING_KEY:?set FACEGATE_SIGNING_KEY in .env}")
        output = self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_SIGNING_KEY does not belong to kiosk-orchestrator")
        self.assertIn("services.kiosk-orchestrator: required FACEGATE_KIOSK_SIGNING_KEY is not set", output)
        self.assertIn("services.kiosk-orchestrator: FACEGATE_SIGNING_KEY carries ${FACEGATE_SIGNING_KEY}, the gateway's token key;"
                      " it runs kiosk-orchestrator, and only auth-gateway gets it", output)

    def test_compose_gateway_key_passed_as_the_kiosk_key_is_rejected(self) -> None:
        self.edit(COMPOSE, "FACEGATE_KIOSK_SIGNING_KEY: ${FACEGATE_KIOSK_SIGNING_KEY:?set FACEGATE_KIOSK_SIGNING_KEY in .env}",
                  "FACEGATE_KIOSK_SIGNING_KEY: ${FACEGATE_SIGNING_KEY:?set FACEGATE_SIGNING_KEY in .env}")
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_KIOSK_SIGNING_KEY carries ${FACEGATE_SIGNING_KEY},"
                                      " the gateway's token key; it runs kiosk-orchestrator, and only auth-gateway gets it")

    def test_compose_kiosk_public_keys_given_to_the_kiosk_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: kiosk-orchestrator\n",
                  "      SERVICE: kiosk-orchestrator\n      FACEGATE_KIOSK_PUBLIC_KEYS: ${FACEGATE_KIOSK_PUBLIC_KEYS}\n")
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_KIOSK_PUBLIC_KEYS does not belong to kiosk-orchestrator")

    def test_compose_gateway_without_the_kiosk_public_keys_is_rejected(self) -> None:
        path = self.root / COMPOSE
        path.write_text(re.sub(r"\n *FACEGATE_KIOSK_PUBLIC_KEYS: [^\n]*", "", path.read_text()))
        self.assert_rejected(COMPOSE, "services.auth-gateway: required FACEGATE_KIOSK_PUBLIC_KEYS is not set")

    def test_compose_audit_key_given_to_the_matcher_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: matcher-worker\n",
                  "      SERVICE: matcher-worker\n      FACEGATE_AUDIT_KEY: ${FACEGATE_AUDIT_KEY:?set FACEGATE_AUDIT_KEY in .env}\n")
        output = self.assert_rejected(COMPOSE, "services.matcher-worker: FACEGATE_AUDIT_KEY does not belong to matcher-worker")
        self.assertIn("services.matcher-worker: FACEGATE_AUDIT_KEY carries ${FACEGATE_AUDIT_KEY}, the audit chain key; it runs"
                      " matcher-worker, and only auth-gateway, ctid-verifier, kiosk-orchestrator get it", output)

    def test_compose_audit_key_given_to_migrate_under_another_name_is_rejected(self) -> None:
        self.edit(COMPOSE, "      SERVICE: facegate\n", "      SERVICE: facegate\n      CHAIN_KEY: ${FACEGATE_AUDIT_KEY}\n")
        self.assert_rejected(COMPOSE, "services.migrate: CHAIN_KEY carries ${FACEGATE_AUDIT_KEY}, the audit chain key; it runs"
                                      " facegate, and only auth-gateway, ctid-verifier, kiosk-orchestrator get it")

    def test_compose_audit_writer_without_the_audit_key_is_rejected(self) -> None:
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  kiosk-orchestrator:\n")
        path.write_text(text[:start] + re.sub(r"\n *FACEGATE_AUDIT_KEY: [^\n]*", "", text[start:], count=1))
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: required FACEGATE_AUDIT_KEY is not set")

    def test_compose_audit_writers_with_different_keys_are_rejected(self) -> None:
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  ctid-verifier:\n")
        path.write_text(text[:start] + text[start:].replace("FACEGATE_AUDIT_KEY: ${FACEGATE_AUDIT_KEY:?",
                                                            "FACEGATE_AUDIT_KEY: ${FACEGATE_CTID_AUDIT_KEY:?", 1))
        self.assert_rejected(COMPOSE, "the audit writers are given different FACEGATE_AUDIT_KEY")

    def test_compose_audit_key_written_into_the_file_is_rejected(self) -> None:
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  kiosk-orchestrator:\n")
        path.write_text(text[:start] + re.sub(r"FACEGATE_AUDIT_KEY: [^\n]*", "FACEGATE_AUDIT_KEY: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                                              text[start:], count=1))
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_AUDIT_KEY (the audit chain key) is written into the"
                                      " compose file; take it from .env")

    def test_compose_previous_audit_keys_on_one_writer_only_is_rejected(self) -> None:
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  ctid-verifier:\n")
        path.write_text(text[:start] + re.sub(r"\n *FACEGATE_PREVIOUS_AUDIT_KEYS: [^\n]*", "", text[start:], count=1))
        self.assert_rejected(COMPOSE, "FACEGATE_PREVIOUS_AUDIT_KEYS differs between the audit writers")

    def test_audit_key_missing_from_env_example_is_rejected(self) -> None:
        self.edit("deploy/compose.env.example", "FACEGATE_AUDIT_KEY=\n", "")
        self.assert_rejected("deploy/compose.env.example", f"FACEGATE_AUDIT_KEY is required by {COMPOSE}")

    # -- Kafka TLS/SASL (Compose, the commented example) ------------------------------------

    def enable_compose_kafka_tls(self) -> None:
        """Uncomment the example as its comments tell an operator to: the marked lines of the compose file
        and the SASL passwords of the env example, with the two mounted files present."""
        path = self.root / COMPOSE
        pattern = r"(?m)^(\s*)# ((?:FACEGATE_KAFKA_\w+|COMMAND_CONFIG): .*|volumes:|  - \./deploy/kafka-.*|- \./deploy/kafka-.*)$"
        text, count = re.subn(pattern, r"\1\2", path.read_text())
        self.assertGreaterEqual(count, 4 * 7 + 3, "test setup: the commented example changed shape")
        path.write_text(text)
        example = self.root / "deploy/compose.env.example"
        text, count = re.subn(r"(?m)^# (FACEGATE_KAFKA_SASL_PASSWORD_\w+=)$", r"\1", example.read_text())
        self.assertEqual(count, 4, "test setup: the env example's SASL passwords changed shape")
        example.write_text(text)
        (self.root / "deploy/kafka-ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
        (self.root / "deploy/kafka-client.properties").write_text("security.protocol=SASL_SSL\n")

    def test_compose_kafka_tls_example_passes_when_enabled(self) -> None:
        self.enable_compose_kafka_tls()
        compose = (self.root / COMPOSE).read_text()
        self.assertIn("      FACEGATE_KAFKA_SASL_PASSWORD: ${FACEGATE_KAFKA_SASL_PASSWORD_CTID_VERIFIER:?", compose)
        self.assertIn("      COMMAND_CONFIG: /opt/facegate/kafka/client.properties", compose)
        result = self.run_validator()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_compose_kafka_password_written_into_the_file_is_rejected(self) -> None:
        self.enable_compose_kafka_tls()
        self.edit(COMPOSE, "FACEGATE_KAFKA_SASL_PASSWORD: ${FACEGATE_KAFKA_SASL_PASSWORD_MATCHER_WORKER:?set"
                           " FACEGATE_KAFKA_SASL_PASSWORD_MATCHER_WORKER in .env}", "FACEGATE_KAFKA_SASL_PASSWORD: hunter2")
        self.assert_rejected(COMPOSE, "services.matcher-worker: FACEGATE_KAFKA_SASL_PASSWORD (a Kafka SASL password) is written"
                                      " into the compose file")

    def test_compose_kafka_password_of_another_service_is_rejected(self) -> None:
        self.enable_compose_kafka_tls()
        self.edit(COMPOSE, "${FACEGATE_KAFKA_SASL_PASSWORD_KIOSK_ORCHESTRATOR:?set FACEGATE_KAFKA_SASL_PASSWORD_KIOSK_ORCHESTRATOR",
                  "${FACEGATE_KAFKA_SASL_PASSWORD_AUTH_GATEWAY:?set FACEGATE_KAFKA_SASL_PASSWORD_AUTH_GATEWAY")
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_KAFKA_SASL_PASSWORD carries"
                                      " FACEGATE_KAFKA_SASL_PASSWORD_AUTH_GATEWAY, auth-gateway's Kafka SASL password;"
                                      " only auth-gateway gets it")

    def test_compose_sasl_settings_without_sasl_are_rejected(self) -> None:
        self.enable_compose_kafka_tls()
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  ctid-verifier:\n")
        path.write_text(text[:start] + text[start:].replace("FACEGATE_KAFKA_SECURITY_PROTOCOL: sasl_ssl",
                                                            "FACEGATE_KAFKA_SECURITY_PROTOCOL: ssl", 1))
        self.assert_rejected(COMPOSE, "services.ctid-verifier: FACEGATE_KAFKA_SASL_MECHANISM, FACEGATE_KAFKA_SASL_PASSWORD,"
                                      " FACEGATE_KAFKA_SASL_USERNAME set, but FACEGATE_KAFKA_SECURITY_PROTOCOL is ssl")

    def test_compose_sasl_plain_in_clear_text_is_rejected(self) -> None:
        self.enable_compose_kafka_tls()
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  kiosk-orchestrator:\n")
        text = text[:start] + text[start:].replace("FACEGATE_KAFKA_SECURITY_PROTOCOL: sasl_ssl",
                                                   "FACEGATE_KAFKA_SECURITY_PROTOCOL: sasl_plaintext", 1)
        path.write_text(text[:start] + text[start:].replace("FACEGATE_KAFKA_SASL_MECHANISM: SCRAM-SHA-512",
                                                            "FACEGATE_KAFKA_SASL_MECHANISM: PLAIN", 1))
        self.assert_rejected(COMPOSE, "services.kiosk-orchestrator: FACEGATE_KAFKA_SECURITY_PROTOCOL=sasl_plaintext with SASL PLAIN"
                                      " sends the password in clear text")

    def test_compose_kafka_ca_not_mounted_is_rejected(self) -> None:
        self.enable_compose_kafka_tls()
        path = self.root / COMPOSE
        text = path.read_text()
        start = text.index("  auth-gateway:\n")
        path.write_text(text[:start] + text[start:].replace("      - ./deploy/kafka-ca.crt:/etc/facegate/kafka/ca.crt:ro\n",
                                                            "      - ./deploy/kafka-ca.crt:/etc/kafka/ca.crt:ro\n", 1))
        self.assert_rejected(COMPOSE, "services.auth-gateway: FACEGATE_KAFKA_SSL_CA_LOCATION=/etc/facegate/kafka/ca.crt is not"
                                      " inside a mounted volume")

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

    def test_job_topic_without_retention_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/files/create-topics.sh",
                  "kiosk.commands.v1                  6  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000",
                  "kiosk.commands.v1                  6  max.message.bytes=@MAX@")
        self.assert_rejected("deploy/k8s/base/files/create-topics.sh",
                             "topic kiosk.commands.v1 carries images or personal data but sets no retention.ms")

    def test_job_topic_kept_for_days_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/files/create-topics.sh", "face.jobs.v1                      12  max.message.bytes=@MAX@,retention.ms=600000",
                  "face.jobs.v1                      12  max.message.bytes=@MAX@,retention.ms=604800000")
        self.assert_rejected("deploy/k8s/base/files/create-topics.sh",
                             "topic face.jobs.v1: retention.ms=604800000 is not within 1..3600000 (an hour)")

    def test_reply_topic_without_segment_roll_is_rejected(self) -> None:
        self.edit("deploy/k8s/base/files/create-topics.sh",
                  "replies.ctid-verifier.v1          16  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000",
                  "replies.ctid-verifier.v1          16  max.message.bytes=@MAX@,retention.ms=600000")
        self.assert_rejected("deploy/k8s/base/files/create-topics.sh",
                             "topic replies.ctid-verifier.v1: segment.ms=None must be set and at most retention.ms=600000")

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


class DatabaseScriptTests(unittest.TestCase):
    """deploy/k8s/base/files/set-role-passwords.sh refuses a wrong URL before it connects (no
    database needed: it stops first), and deploy/make-compose-env.sh draws every secret."""

    role_passwords = REPO / "deploy/k8s/base/files/set-role-passwords.sh"
    make_env = REPO / "deploy/make-compose-env.sh"
    urls = {
        "DATABASE_URL_OWNER": "postgres://facegate_owner:o@db:5432/facegate",
        "DATABASE_URL_GATEWAY": "postgres://facegate_gateway:g@db:5432/facegate",
        "DATABASE_URL_MATCHER": "postgres://facegate_matcher:m@db:5432/facegate",
        "DATABASE_URL_CTID": "postgres://facegate_ctid:c@db:5432/facegate",
        "DATABASE_URL_KIOSK": "postgres://facegate_kiosk:k@db:5432/facegate",
    }

    def set_passwords(self, **changes: str) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory() as bin_dir:
            # A psql that records being called: the refusals must come before any connection.
            psql = Path(bin_dir) / "psql"
            psql.write_text('#!/bin/bash\necho "psql called" >&2\nexit 99\n')
            psql.chmod(0o755)
            env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", **self.urls, **changes}
            return subprocess.run(["bash", str(self.role_passwords)], env=env, capture_output=True, text=True, timeout=30)

    def test_service_url_naming_the_owner_is_refused(self) -> None:
        result = self.set_passwords(DATABASE_URL_GATEWAY="postgres://facegate_owner:o@db:5432/facegate")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("DATABASE_URL_GATEWAY logs in as 'facegate_owner', not facegate_gateway", result.stderr)
        self.assertNotIn("psql called", result.stderr)

    def test_url_without_password_is_refused(self) -> None:
        result = self.set_passwords(DATABASE_URL_KIOSK="postgres://facegate_kiosk@db:5432/facegate")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("DATABASE_URL_KIOSK has no password", result.stderr)
        self.assertNotIn("psql called", result.stderr)

    def test_connecting_as_a_superuser_is_refused(self) -> None:
        result = self.set_passwords(DATABASE_URL_OWNER="postgres://postgres:p@db:5432/facegate")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("DATABASE_URL_OWNER must log in as facegate_owner", result.stderr)
        self.assertNotIn("psql called", result.stderr)

    def test_good_urls_reach_psql_as_the_owner(self) -> None:
        result = self.set_passwords()
        self.assertEqual(result.returncode, 99, result.stderr)
        self.assertIn("psql called", result.stderr)

    def test_generated_env_has_a_password_per_role(self) -> None:
        if not shutil.which("openssl"):
            self.skipTest("openssl is not installed")
        result = subprocess.run(["bash", str(self.make_env)], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        values = dict(line.split("=", 1) for line in result.stdout.splitlines() if line and not line.startswith("#"))
        passwords = {k: v for k, v in values.items() if k == "POSTGRES_PASSWORD" or k.startswith("DB_PASSWORD_")}
        self.assertEqual(sorted(passwords), ["DB_PASSWORD_CTID", "DB_PASSWORD_GATEWAY", "DB_PASSWORD_KIOSK",
                                             "DB_PASSWORD_MATCHER", "DB_PASSWORD_OWNER", "POSTGRES_PASSWORD"])
        for name, value in passwords.items():
            self.assertRegex(value, r"^[0-9a-f]{48}$", name)  # URL-safe: interpolated into URLs
        self.assertEqual(len(set(passwords.values())), len(passwords), "each role its own password")
        # Every variable the compose file requires is filled.
        # (The commented Kafka TLS/SASL example requires nothing until it is uncommented.)
        live = "\n".join(line for line in (REPO / COMPOSE).read_text().splitlines() if not line.lstrip().startswith("#"))
        required = set(re.findall(r"\$\{(\w+):\?", live))
        self.assertEqual({name for name in required if not values.get(name)}, set())

    def test_generated_env_has_a_message_signing_key_per_service(self) -> None:
        if not shutil.which("openssl"):
            self.skipTest("openssl is not installed")
        result = subprocess.run(["bash", str(self.make_env)], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        values = dict(line.split("=", 1) for line in result.stdout.splitlines() if line and not line.startswith("#"))
        services = ["auth-gateway", "matcher-worker", "ctid-verifier", "kiosk-orchestrator"]
        seeds = {service: values.get("FACEGATE_SERVICE_KEY_" + service.upper().replace("-", "_"), "") for service in services}
        for service, seed in seeds.items():
            self.assertEqual(len(base64.b64decode(seed, validate=True)), 32, service)
        self.assertEqual(len(set(seeds.values())), len(seeds), "each service its own key")
        listed = [entry.split("=", 1) for entry in values["FACEGATE_SERVICE_PUBLIC_KEYS"].split(",")]
        self.assertEqual([service for service, _ in listed], services)
        # Each listed public key is the one of that service's seed (PKCS#8 wrapping of a raw Ed25519 seed).
        for service, public in listed:
            der = bytes.fromhex("302e020100300506032b657004220420") + base64.b64decode(seeds[service])
            derived = subprocess.run(["openssl", "pkey", "-inform", "DER", "-pubout", "-outform", "DER"],
                                     input=der, capture_output=True, timeout=30, check=True).stdout[-32:]
            self.assertEqual(base64.b64encode(derived).decode(), public, service)

    def test_generated_env_has_the_kiosk_token_key_pair_and_an_audit_key(self) -> None:
        if not shutil.which("openssl"):
            self.skipTest("openssl is not installed")
        result = subprocess.run(["bash", str(self.make_env)], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        values = dict(line.split("=", 1) for line in result.stdout.splitlines() if line and not line.startswith("#"))
        seed = base64.b64decode(values["FACEGATE_KIOSK_SIGNING_KEY"], validate=True)
        self.assertEqual(len(seed), 32)
        der = bytes.fromhex("302e020100300506032b657004220420") + seed
        derived = subprocess.run(["openssl", "pkey", "-inform", "DER", "-pubout", "-outform", "DER"],
                                 input=der, capture_output=True, timeout=30, check=True).stdout[-32:]
        self.assertEqual(values["FACEGATE_KIOSK_PUBLIC_KEYS"], base64.b64encode(derived).decode())
        self.assertEqual(len(base64.b64decode(values["FACEGATE_AUDIT_KEY"], validate=True)), 32)
        # Drawn on their own: no key is another one's copy.
        drawn = [values[k] for k in ("FACEGATE_SIGNING_KEY", "FACEGATE_KIOSK_SIGNING_KEY", "FACEGATE_AUDIT_KEY", "FACEGATE_SEALING_KEY")]
        self.assertEqual(len(set(drawn)), len(drawn))
        self.assertEqual(values["FACEGATE_PREVIOUS_AUDIT_KEYS"], "", "no previous audit key before a rotation")


if __name__ == "__main__":
    unittest.main()
