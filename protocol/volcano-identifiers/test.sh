#!/usr/bin/env bash
# Runs the extender plugin's tests (upstream's and identifiers_test.go) and go vet on the patched
# copy of volcano.sh/volcano v1.14.1, and checks that volcano-v1.14.1-extender.patch is the diff
# of the patched files. Extra arguments go to go test (e.g. -run TestBatchPredicate -v).
set -euo pipefail
source "$(dirname "$0")/prepare.sh"
for f in "${test_files[@]}"; do
  cp "$here/patched/$(basename "$f")" "$work/volcano/$f"
done
"$here/diff.sh" --check
cd "$here"
unformatted=$(gofmt -l patched)
[ -z "$unformatted" ] || { echo "gofmt: $unformatted" >&2; exit 1; }
go vet -modfile="$modfile" volcano.sh/volcano/pkg/scheduler/plugins/extender
go test -modfile="$modfile" -count=1 "$@" volcano.sh/volcano/pkg/scheduler/plugins/extender
