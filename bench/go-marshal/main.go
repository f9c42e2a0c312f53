// Command go-marshal measures what Volcano itself spends on each extender call
// before the request leaves the scheduler: the extender plugin's send
// (pkg/scheduler/plugins/extender/extender.go, v1.14.1) builds the verb's
// request struct around the session's own objects and calls
// encoding/json.Marshal on it, once per call.
//
// For each body of the plan, read on stdin as JSON
//
//	[{"name": "...", "verb": "predicate", "body": "/path", "requests": 100, "max_seconds": 5}]
//
// it decodes the body into the same request type Volcano marshals for that
// verb (the objects Volcano holds), then times json.Marshal of it
// repeatedly, one call at a time (run it with GOMAXPROCS=1 on one pinned
// core). It writes on stdout
//
//	{"name": {"latencies_us": [...], "out_bytes": N, "calls": N}, ...}
//
// A body that does not decode, or a verb Volcano does not send, is an error
// (exit 1), never a silent zero.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
)

type item struct {
	Name       string  `json:"name"`
	Verb       string  `json:"verb"`
	Body       string  `json:"body"`
	Requests   int     `json:"requests"`
	MaxSeconds float64 `json:"max_seconds"`
}

type result struct {
	LatenciesUs []float64 `json:"latencies_us"`
	OutBytes    int       `json:"out_bytes"`
	InBytes     int       `json:"in_bytes"`
	Calls       int       `json:"calls"`
}

// request returns a pointer to the struct extender.go passes to send for the
// verb. jobEnqueued (1.16+) has no request type in v1.14.1; its body is a
// JobEnqueueableRequest's shape, so it is measured as one.
func request(verb string) (any, error) {
	switch verb {
	case "onSessionOpen":
		return &extender.OnSessionOpenRequest{}, nil
	case "onSessionClose":
		return &extender.OnSessionCloseRequest{}, nil
	case "predicate":
		return &extender.PredicateRequest{}, nil
	case "prioritize":
		return &extender.PrioritizeRequest{}, nil
	case "preemptable":
		return &extender.PreemptableRequest{}, nil
	case "reclaimable":
		return &extender.ReclaimableRequest{}, nil
	case "jobEnqueueable", "jobEnqueued":
		return &extender.JobEnqueueableRequest{}, nil
	case "queueOverused":
		return &extender.QueueOverusedRequest{}, nil
	case "jobReady":
		return &extender.JobReadyRequest{}, nil
	case "allocate", "deallocate":
		return &extender.EventHandlerRequest{}, nil
	}
	return nil, fmt.Errorf("verb %q is not one Volcano's extender sends", verb)
}

func measure(it item) (*result, error) {
	body, err := os.ReadFile(it.Body)
	if err != nil {
		return nil, err
	}
	req, err := request(it.Verb)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, req); err != nil {
		return nil, fmt.Errorf("%s: decode %s: %w", it.Name, it.Body, err)
	}
	inBytes := len(body)
	body = nil
	runtime.GC()
	out, err := json.Marshal(req) // warm-up, and the size of what Volcano would send
	if err != nil {
		return nil, fmt.Errorf("%s: marshal: %w", it.Name, err)
	}
	res := &result{OutBytes: len(out), InBytes: inBytes}
	out = nil
	deadline := time.Now().Add(time.Duration(it.MaxSeconds * float64(time.Second)))
	for res.Calls < it.Requests && (res.Calls == 0 || time.Now().Before(deadline)) {
		t0 := time.Now()
		b, err := json.Marshal(req)
		el := time.Since(t0)
		if err != nil {
			return nil, err
		}
		_ = b
		res.LatenciesUs = append(res.LatenciesUs, float64(el.Nanoseconds())/1e3)
		res.Calls++
	}
	return res, nil
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var plan []item
	if err := json.Unmarshal(raw, &plan); err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		os.Exit(1)
	}
	out := map[string]*result{}
	for _, it := range plan {
		r, err := measure(it)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out[it.Name] = r
		runtime.GC()
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
