#!/usr/bin/env bash
# The differential suite's identifiers mode (suite/identifiers.go, issue 51): the volcano-1.14
# module's TestIdentifiers (build tag identifiers) built against volcano.sh/volcano v1.14.1 with
# protocol/volcano-identifiers's patch, which prepare.sh applies to a copy of the published module
# (here under .build-identifiers, apart from the e2e's copy). Extra arguments go to go test
# (e.g. -run 'TestIdentifiers/PdbPlugin' -v). CALDERA_BIN names the caldera under test, as for
# the suite's other modes.
set -euo pipefail
conformance=$(cd "$(dirname "$0")" && pwd)
export VOLCANO_IDENTIFIERS_WORK=${VOLCANO_IDENTIFIERS_WORK:-$conformance/.build-identifiers}
# shellcheck source=../../protocol/volcano-identifiers/prepare.sh
source "$conformance/../../protocol/volcano-identifiers/prepare.sh"
module=$conformance/volcano-1.14
# The module's own go.mod and go.sum, with the patched copy in place of the published module
# (go test -modfile reads go.sum beside the file it names).
modfile=$work/conformance-1.14.mod
{ cat "$module/go.mod"; printf '\nreplace volcano.sh/volcano => %s\n' "$work/volcano"; } >"$modfile"
cp "$module/go.sum" "$work/conformance-1.14.sum"
cd "$module"
go test -modfile="$modfile" -tags identifiers -count=1 -timeout 30m -run '^TestIdentifiers$' "$@" .
