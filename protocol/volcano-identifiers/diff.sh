#!/usr/bin/env bash
# Writes volcano-v1.14.1-extender.patch: the patched files as a unified diff against the
# published module volcano.sh/volcano v1.14.1 (git apply -p1 at the module's root, or at
# volcano-sh/volcano's tag v1.14.1). With --check, only checks that the file is up to date.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
upstream=$(cd "$here" && go mod download -json volcano.sh/volcano@v1.14.1 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$upstream" ] || { echo "volcano.sh/volcano@v1.14.1 not downloaded" >&2; exit 1; }
dir=pkg/scheduler/plugins/extender
patch=$(
  for f in argument.go capabilities.go extender.go identifiers_test.go; do
    old=$upstream/$dir/$f
    [ -e "$old" ] || old=/dev/null
    label=a/$dir/$f
    [ "$old" = /dev/null ] && label=/dev/null
    diff -u --label "$label" --label "b/$dir/$f" "$old" "$here/patched/$f" || [ $? -eq 1 ]
  done
)
out=$here/volcano-v1.14.1-extender.patch
if [ "${1:-}" = "--check" ]; then
  if [ "$patch" != "$(cat "$out" 2>/dev/null)" ]; then
    echo "$out is not the diff of patched/: run $here/diff.sh" >&2
    exit 1
  fi
else
  printf '%s\n' "$patch" >"$out"
fi
