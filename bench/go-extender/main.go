// Command go-extender is a minimal Volcano extender written the way an
// operator would write one in Go: it decodes every request body into
// Volcano's own request types with encoding/json and answers a fixed
// decision. It exists only as a baseline for bench/ (run with GOMAXPROCS=1).
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"

	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
)

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		http.Error(w, "decode: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8888", "listen address (loopback)")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("POST /onSessionOpen", func(w http.ResponseWriter, r *http.Request) {
		var req extender.OnSessionOpenRequest
		if decode(w, r, &req) {
			reply(w, extender.OnSessionOpenResponse{})
		}
	})
	mux.HandleFunc("POST /onSessionClose", func(w http.ResponseWriter, r *http.Request) {
		var req extender.OnSessionCloseRequest
		if decode(w, r, &req) {
			reply(w, extender.OnSessionCloseResponse{})
		}
	})
	mux.HandleFunc("POST /predicate", func(w http.ResponseWriter, r *http.Request) {
		var req extender.PredicateRequest
		if decode(w, r, &req) {
			reply(w, extender.PredicateResponse{})
		}
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		var req extender.PrioritizeRequest
		if !decode(w, r, &req) {
			return
		}
		scores := make(map[string]float64, len(req.Nodes))
		for _, n := range req.Nodes {
			if n != nil {
				scores[n.Name] = 0
			}
		}
		reply(w, extender.PrioritizeResponse{NodeScore: scores})
	})
	evict := func(w http.ResponseWriter, r *http.Request) {
		var req extender.PreemptableRequest
		if decode(w, r, &req) {
			reply(w, extender.PreemptableResponse{Status: 0, Victims: []*apiTask{}})
		}
	}
	mux.HandleFunc("POST /preemptable", evict)
	mux.HandleFunc("POST /reclaimable", evict)
	mux.HandleFunc("POST /jobEnqueueable", func(w http.ResponseWriter, r *http.Request) {
		var req extender.JobEnqueueableRequest
		if decode(w, r, &req) {
			reply(w, extender.JobEnqueueableResponse{Status: 1})
		}
	})
	mux.HandleFunc("POST /jobEnqueued", func(w http.ResponseWriter, r *http.Request) {
		var req extender.JobEnqueueableRequest // JobEnqueuedRequest does not exist in v1.14.1 (nor v1.15.1)
		if decode(w, r, &req) {
			_, _ = w.Write([]byte("{}"))
		}
	})
	mux.HandleFunc("POST /queueOverused", func(w http.ResponseWriter, r *http.Request) {
		var req extender.QueueOverusedRequest
		if decode(w, r, &req) {
			reply(w, extender.QueueOverusedResponse{Overused: false})
		}
	})
	mux.HandleFunc("POST /jobReady", func(w http.ResponseWriter, r *http.Request) {
		var req extender.JobReadyRequest
		if decode(w, r, &req) {
			reply(w, extender.JobReadyResponse{Status: true})
		}
	})
	handler := func(w http.ResponseWriter, r *http.Request) {
		var req extender.EventHandlerRequest
		if decode(w, r, &req) {
			reply(w, extender.EventHandlerResponse{})
		}
	}
	mux.HandleFunc("POST /allocate", handler)
	mux.HandleFunc("POST /deallocate", handler)

	srv := &http.Server{Addr: *addr, Handler: mux}
	log.SetOutput(os.Stderr)
	log.Printf("go-extender listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}
