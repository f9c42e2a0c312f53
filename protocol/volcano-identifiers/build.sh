#!/usr/bin/env bash
# Builds vc-scheduler (volcano.sh/volcano/cmd/scheduler v1.14.1) with the patched extender plugin
# into the given path:
#
#   protocol/volcano-identifiers/build.sh OUT
#
# The module's other packages and every dependency are those tests/e2e builds (same go.mod pins
# and replace directives, hashes from go.sum); only pkg/scheduler/plugins/extender differs.
# VOLCANO_IDENTIFIERS_WORK: where the patched copy of the module goes (default .build here).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out=$1
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
source "$(dirname "$0")/prepare.sh"
cd "$here"
go build -modfile="$modfile" -o "$out" volcano.sh/volcano/cmd/scheduler
