# Sourced by build.sh and test.sh: prepares a copy of the published module volcano.sh/volcano
# v1.14.1 with the patched extender plugin, and a go.mod that replaces the module with it.
# Go refuses -overlay for files under GOMODCACHE, so the copy is the way to patch it without
# touching the module cache. Sets: here, work, modfile, upstream.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${VOLCANO_IDENTIFIERS_WORK:-$here/.build}
modfile=$work/go.mod
# The patched files, relative to the module's root; the test file only in test builds.
patched_files=(
  pkg/scheduler/plugins/extender/argument.go
  pkg/scheduler/plugins/extender/capabilities.go
  pkg/scheduler/plugins/extender/extender.go
)
test_files=(
  pkg/scheduler/plugins/extender/identifiers_test.go
)

command -v go >/dev/null 2>&1 || { echo "go is not installed" >&2; exit 1; }
# The module as published (downloaded, with its hash checked against go.sum, if not cached).
upstream=$(cd "$here" && go mod download -json volcano.sh/volcano@v1.14.1 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$upstream" ] || { echo "volcano.sh/volcano@v1.14.1 not downloaded" >&2; exit 1; }

mkdir -p "$work"
# The module's code is copied once (a stamp names its source); the plugin's directory every time.
if [ "$(cat "$work/volcano/.copied-from" 2>/dev/null)" != "$upstream" ]; then
  rm -rf "$work/volcano"
  mkdir -p "$work/volcano"
  for f in go.mod go.sum LICENSE cmd pkg third_party; do
    cp -R "$upstream/$f" "$work/volcano/"
  done
  chmod -R u+w "$work/volcano"
  echo "$upstream" >"$work/volcano/.copied-from"
fi
plugin=pkg/scheduler/plugins/extender
rm -rf "$work/volcano/$plugin"
cp -R "$upstream/$plugin" "$work/volcano/$plugin"
chmod -R u+w "$work/volcano/$plugin"
for f in "${patched_files[@]}"; do
  cp "$here/patched/$(basename "$f")" "$work/volcano/$f"
done

# go.mod and go.sum of this directory, plus the replacement (go build -modfile=$modfile).
{ cat "$here/go.mod"; printf '\nreplace volcano.sh/volcano => %s\n' "$work/volcano"; } >"$modfile"
cp "$here/go.sum" "$work/go.sum"
