// Command consistent prints, as JSON, the replica stathat.com/c/consistent v1.0.0 (the hash ring
// of Volcano's multi-scheduler mode, pkg/scheduler/cache/util.go getMultiSchedulerInfo) gives
// each of a fixed set of keys, for several replica counts, built as vc-scheduler builds it:
// consistent.New(), then Add("<base>-<i>") for i in 0..n-1. Caldera's Python ring
// (app/cluster_state/multi_scheduler.py) must give the same:
// tests/app/cluster_state/test_multi_scheduler.py runs this with `go run .` and compares.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"stathat.com/c/consistent"
)

// Keys: what Volcano hashes (owner names, pod names, node names), some at the 64-byte boundary
// of hashKey's scratch buffer, one empty, one not ASCII.
func keys() []string {
	ks := []string{"", "a", "job-1", "train-42", "node-01", "kind-worker", "volcano-scheduler-0"}
	for i := 0; i < 200; i++ {
		ks = append(ks, fmt.Sprintf("pod-%d", i), fmt.Sprintf("node-%03d", i), fmt.Sprintf("j%x-task", i*7919))
	}
	long := ""
	for len(long) < 70 {
		long += "x"
		ks = append(ks, long)
	}
	return append(ks, "nœud-é")
}

type ring struct {
	Base     string            `json:"base"`
	Replicas int               `json:"replicas"`
	Get      map[string]string `json:"get"`
	Empty    []string          `json:"empty"` // keys whose Get returned ErrEmptyCircle
}

func main() {
	var out []ring
	for _, base := range []string{"volcano-scheduler", "vc"} {
		for _, n := range []int{0, 1, 2, 3, 5, 8, 13, 64} {
			c := consistent.New()
			for i := 0; i < n; i++ {
				c.Add(fmt.Sprintf("%s-%d", base, i))
			}
			r := ring{Base: base, Replicas: n, Get: map[string]string{}}
			for _, k := range keys() {
				got, err := c.Get(k)
				if err != nil {
					r.Empty = append(r.Empty, k)
					continue
				}
				r.Get[k] = got
			}
			out = append(out, r)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
