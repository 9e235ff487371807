#!/bin/bash
# Offline validation of the deployment files (docker-compose.yml, deploy/docker, deploy/k8s),
# called by `make test`; no Docker engine or cluster needed.
#   1. installs the pinned tools of deploy/validate/requirements.txt into .run/deploy-venv
#      (once; again when the requirements change) — the only step that needs PyPI;
#   2. validates every file, one line per file (deploy/validate/validate_deploy.py), the optional
#      Kustomize components (deploy/k8s/kafka-tls, deploy/k8s/monitoring) rendered onto both
#      Kubernetes layouts, the alert rules of deploy/prometheus/alerts.yml parsed as PromQL and their
#      metric names checked against the Swift sources;
#   3. runs Tests/deploy: broken copies of the files must fail validation, the container
#      entrypoint / health check behave as documented, and the topic script creates the
#      contract's topics on the broker named by FACEGATE_TEST_KAFKA_BROKERS (required); in
#      parallel processes, one per core (Tests/deploy/run_tests.py; FACEGATE_DEPLOY_TEST_JOBS
#      sets another number).
# `--install-only` stops after step 1, `--no-self-test` after step 2. Exits non-zero on any problem.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${root}/.run/deploy-venv"
requirements="${root}/deploy/validate/requirements.txt"
stamp="${venv}/.requirements.sha256"
python="${PYTHON:-python3}"

wanted="$(sha256sum "${requirements}" | cut -d' ' -f1)"
if [[ ! -x "${venv}/bin/python" || "$(cat "${stamp}" 2>/dev/null || true)" != "${wanted}" ]]; then
  echo "validate-deploy: installing pinned tools into ${venv#"${root}"/}"
  rm -rf "${venv}"
  mkdir -p "$(dirname "${venv}")"
  "${python}" -m venv "${venv}"
  "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "${requirements}"
  "${venv}/bin/python" -m pip check --disable-pip-version-check > /dev/null
  echo "${wanted}" > "${stamp}"
fi

[[ "${1:-}" != "--install-only" ]] || exit 0
"${venv}/bin/python" "${root}/deploy/validate/validate_deploy.py" --root "${root}"

if [[ "${1:-}" != "--no-self-test" ]]; then
  echo "validate-deploy: self-tests (Tests/deploy)"
  "${venv}/bin/python" "${root}/Tests/deploy/run_tests.py" ${FACEGATE_DEPLOY_TEST_JOBS:+--jobs "${FACEGATE_DEPLOY_TEST_JOBS}"}
fi
