#!/usr/bin/env bash
# Seeds the Go module cache with volcano.sh/apis v1.15.0 when the module proxy
# refuses it (this build machine's proxy answers 403 "not available").
#
# Why: volcano.sh/volcano v1.15.1 builds against its in-repo staging copy of
# volcano.sh/apis (a local-path replace that a dependent module cannot use).
# The published module volcano.sh/apis v1.15.0 has byte-identical pkg/, go.mod
# and go.sum to volcano v1.15.1's staging/src/volcano.sh/apis (same git tree
# hashes), so tests/conformance/go.mod pins volcano.sh/apis to v1.15.0.
#
# This script builds a one-module file:// proxy from a git checkout of
# github.com/volcano-sh/apis at tag v1.15.0 and runs `go mod download`
# through it. The zip is checked against the h1: hash already in go.sum, so a
# wrong source fails loudly. Once seeded, plain `go test ./...` works offline.
#
# Usage: hack/seed-volcano-apis.sh [APIS_GIT_DIR]
#   APIS_GIT_DIR defaults to $VOLCANO_APIS_GIT, then
#   /work/.mirror/volcano-sh+apis/repo, else a shallow clone from GitHub.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v1.15.0
MOD=volcano.sh/apis

if GOFLAGS=-mod=mod go mod download "$MOD@$VERSION" >/dev/null 2>&1; then
  echo "$MOD@$VERSION already available"; exit 0
fi

src="${1:-${VOLCANO_APIS_GIT:-/work/.mirror/volcano-sh+apis/repo}}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
if ! git -C "$src" rev-parse -q --verify "$VERSION^{commit}" >/dev/null 2>&1; then
  echo "cloning github.com/volcano-sh/apis@$VERSION" >&2
  git clone -q --bare --depth 1 --branch "$VERSION" https://github.com/volcano-sh/apis "$tmp/apis.git"
  src="$tmp/apis.git"
fi
dir="$tmp/proxy/$MOD/@v"; mkdir -p "$dir"
git -C "$src" archive --format=zip --prefix="$MOD@$VERSION/" "$VERSION" > "$dir/$VERSION.zip"
git -C "$src" show "$VERSION:go.mod" > "$dir/$VERSION.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$VERSION" \
  "$(git -C "$src" log -1 --format=%cI "$VERSION")" > "$dir/$VERSION.info"
echo "$VERSION" > "$dir/list"
GOPROXY="file://$tmp/proxy" GONOSUMDB="$MOD" GOFLAGS=-mod=mod go mod download "$MOD@$VERSION"
echo "seeded $MOD@$VERSION into $(go env GOMODCACHE)"
