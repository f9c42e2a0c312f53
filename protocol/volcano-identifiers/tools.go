//go:build tools

// Package volcanoidentifiers pins the program build.sh builds: Volcano's scheduler v1.14.1, whose
// extender plugin is replaced at build time by the patched files (go build -overlay).
package volcanoidentifiers

import (
	_ "volcano.sh/volcano/cmd/scheduler"
)
