#!/usr/bin/env bash
# End to end: Volcano's vc-scheduler v1.14.1 against kube-apiserver v1.34.1 and etcd v3.6.5, with
# Caldera as its extender sidecar, all on 127.0.0.1 (see README "End to end").
#
#   tests/e2e/run.sh           build (once, into tests/e2e/.bin) and run the scenarios
#   tests/e2e/run.sh --keep    start the cluster with 20 nodes, Caldera and vc-scheduler, print the
#                              kubectl command, and keep it up until Ctrl-C
#   extra arguments go to `go test` (e.g. -run 'TestE2E/preemption'; -tags identifiers -run
#   TestE2EIdentifiers: the identifiers mode, vc-scheduler patched by protocol/volcano-identifiers)
#
# Environment: CALDERA_BIN (default: the repository's .venv/bin/caldera), CALDERA_E2E_BIN (where
# the binaries go, default tests/e2e/.bin), CALDERA_E2E=0 leaves the test out,
# CALDERA_E2E_SESSION_STATE=snapshot runs the scenarios' Caldera without compare mode (default:
# sessionState compare, checked for no difference at quiescence; tests/e2e/compare_mode_test.go).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v go >/dev/null 2>&1 || { echo "run.sh: go is not installed" >&2; exit 1; }
if [ -z "${CALDERA_BIN:-}" ]; then
  if [ ! -x "$root/.venv/bin/caldera" ]; then
    (cd "$root" && uv sync --all-groups)
  fi
  export CALDERA_BIN="$root/.venv/bin/caldera"
fi
cd "$here"
if [ "${1:-}" = "--keep" ]; then
  shift
  export CALDERA_E2E_KEEP=1
  exec go test -count=1 -v -run '^TestE2E$' -timeout 0 "$@" .
fi
# The timeout covers the builds of etcd, kube-apiserver and vc-scheduler, which on an empty Go
# cache take many minutes; each scenario has its own bounded waits.
exec go test -count=1 -v -timeout 45m "$@" .
