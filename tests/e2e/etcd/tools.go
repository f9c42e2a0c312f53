//go:build tools

// Package etcd pins the etcd server the end-to-end harness builds. It is a module of its own so
// that etcd's dependency versions do not move those of kube-apiserver and vc-scheduler.
package etcd

import _ "go.etcd.io/etcd/server/v3"
