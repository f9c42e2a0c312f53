// Command loadgen is bench/'s HTTP load generator: keep-alive connections,
// loopback only, a bounded number of requests and a bounded time.
//
// It reads a JSON plan on stdin and writes a JSON result on stdout.
//
//	{"base": "http://127.0.0.1:PORT", "mode": "load", "path": "/predicate",
//	 "body": "FILE", "concurrency": 16, "requests": 2000, "warmup": 50,
//	 "max_seconds": 20, "timeout_seconds": 30}
//
//	{"base": ..., "mode": "cycle", "repeat": 5, "warmup": 1, "max_seconds": 60, "period_seconds": 1,
//	 "steps": [{"name": "predicate", "concurrency": 16,
//	            "calls": [{"path": "/predicate", "body": "FILE"}, ...]}, ...]}
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Call is one request. Its body is the file Body, or the concatenation of
// Parts: each part is a file path, or a literal when it starts with "=".
type Call struct {
	Path  string   `json:"path"`
	Body  string   `json:"body,omitempty"`
	Parts []string `json:"parts,omitempty"`
}

func (c Call) bytes() ([]byte, error) {
	if c.Parts == nil {
		return load(c.Body)
	}
	n := 0
	for _, p := range c.Parts {
		if len(p) > 0 && p[0] == '=' {
			n += len(p) - 1
			continue
		}
		b, err := load(p)
		if err != nil {
			return nil, err
		}
		n += len(b)
	}
	out := make([]byte, 0, n)
	for _, p := range c.Parts {
		if len(p) > 0 && p[0] == '=' {
			out = append(out, p[1:]...)
		} else {
			out = append(out, bodies[p]...)
		}
	}
	return out, nil
}

type Step struct {
	Name        string `json:"name"`
	Concurrency int    `json:"concurrency"`
	Calls       []Call `json:"calls"`
}

type Plan struct {
	Base           string  `json:"base"`
	Mode           string  `json:"mode"`
	Path           string  `json:"path"`
	Body           string  `json:"body"`
	Concurrency    int     `json:"concurrency"`
	Requests       int     `json:"requests"`
	Warmup         int     `json:"warmup"`
	MaxSeconds     float64 `json:"max_seconds"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	Repeat         int     `json:"repeat"`
	Steps          []Step  `json:"steps"`
	// PeriodSeconds: a cycle starts this long after the one before it began (Volcano's
	// schedule period), idle in between; 0 runs the cycles back to back.
	PeriodSeconds float64 `json:"period_seconds"`
}

type LoadResult struct {
	Requests    int       `json:"requests"`
	Errors      int       `json:"errors"`
	FirstError  string    `json:"first_error,omitempty"`
	ElapsedSec  float64   `json:"elapsed_seconds"`
	LatenciesUS []float64 `json:"latencies_us"`
	BodyBytes   int       `json:"body_bytes"`
	LastResp    string    `json:"last_response,omitempty"`
	TimedOut    bool      `json:"stopped_by_time"`
}

type StepResult struct {
	Name        string    `json:"name"`
	Calls       int       `json:"calls"`
	BodyBytes   int64     `json:"body_bytes"`
	ElapsedUS   []float64 `json:"elapsed_us"` // one per cycle
	LatenciesUS []float64 `json:"latencies_us"`
}

type CycleResult struct {
	Cycles     int           `json:"cycles"`
	Errors     int           `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	TotalUS    []float64     `json:"total_us"`
	Steps      []*StepResult `json:"steps"`
	TimedOut   bool          `json:"stopped_by_time"`
}

type client struct {
	hc   *http.Client
	base string
}

func newClient(base string, conns int, timeout time.Duration) (*client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("refusing non-loopback target %q", base)
	}
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	return &client{hc: &http.Client{Transport: tr, Timeout: timeout}, base: base}, nil
}

// do POSTs body and returns the response body and the latency.
func (c *client) do(path string, body []byte) ([]byte, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, time.Since(t0), err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return nil, d, err
	}
	if resp.StatusCode != http.StatusOK {
		msg := rb
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return rb, d, fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, msg)
	}
	if !json.Valid(rb) {
		return rb, d, fmt.Errorf("%s: response is not one JSON value: %.200q", path, rb)
	}
	return rb, d, nil
}

var bodies = map[string][]byte{}

func load(path string) ([]byte, error) {
	if b, ok := bodies[path]; ok {
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bodies[path] = b
	return b, nil
}

func runLoad(p Plan) (*LoadResult, error) {
	body, err := load(p.Body)
	if err != nil {
		return nil, err
	}
	c, err := newClient(p.Base, p.Concurrency, time.Duration(p.TimeoutSeconds*float64(time.Second)))
	if err != nil {
		return nil, err
	}
	res := &LoadResult{BodyBytes: len(body)}
	// Warm-up: open the connections and let both sides settle.
	var wg sync.WaitGroup
	var werr atomic.Value
	perWorker := (p.Warmup + p.Concurrency - 1) / p.Concurrency
	for w := 0; w < p.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				if _, _, err := c.do(p.Path, body); err != nil {
					werr.Store(err.Error())
					return
				}
			}
		}()
	}
	wg.Wait()
	if e := werr.Load(); e != nil {
		return nil, errors.New("warm-up failed: " + e.(string))
	}

	deadline := time.Now().Add(time.Duration(p.MaxSeconds * float64(time.Second)))
	var next int64 = -1
	lat := make([]float64, p.Requests)
	done := make([]bool, p.Requests)
	var mu sync.Mutex
	var nerr int
	var stopped atomic.Bool
	t0 := time.Now()
	for w := 0; w < p.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if int(i) >= p.Requests {
					return
				}
				if time.Now().After(deadline) {
					stopped.Store(true)
					return
				}
				rb, d, err := c.do(p.Path, body)
				lat[i] = float64(d.Nanoseconds()) / 1e3
				done[i] = true
				if err != nil {
					mu.Lock()
					nerr++
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
					mu.Unlock()
				} else if i == 0 {
					res.LastResp = string(rb)
				}
			}
		}()
	}
	wg.Wait()
	res.ElapsedSec = time.Since(t0).Seconds()
	for i := range lat {
		if done[i] {
			res.LatenciesUS = append(res.LatenciesUS, lat[i])
		}
	}
	res.Requests = len(res.LatenciesUS)
	res.Errors = nerr
	res.TimedOut = stopped.Load()
	return res, nil
}

func runCycle(p Plan) (*CycleResult, error) {
	maxc := 1
	for _, s := range p.Steps {
		if s.Concurrency > maxc {
			maxc = s.Concurrency
		}
		for _, call := range s.Calls {
			if _, err := call.bytes(); err != nil {
				return nil, err
			}
		}
	}
	c, err := newClient(p.Base, maxc, time.Duration(p.TimeoutSeconds*float64(time.Second)))
	if err != nil {
		return nil, err
	}
	res := &CycleResult{}
	for _, s := range p.Steps {
		sr := &StepResult{Name: s.Name, Calls: len(s.Calls)}
		for _, call := range s.Calls {
			b, _ := call.bytes()
			sr.BodyBytes += int64(len(b))
		}
		res.Steps = append(res.Steps, sr)
	}
	deadline := time.Now().Add(time.Duration(p.MaxSeconds * float64(time.Second)))
	var mu sync.Mutex
	for cyc := 0; cyc < p.Warmup+p.Repeat; cyc++ {
		if cyc > p.Warmup && time.Now().After(deadline) {
			res.TimedOut = true
			break
		}
		record := cyc >= p.Warmup
		tc := time.Now()
		for si, s := range p.Steps {
			ts := time.Now()
			conc := s.Concurrency
			if conc < 1 {
				conc = 1
			}
			var next int64 = -1
			var wg sync.WaitGroup
			lats := make([]float64, len(s.Calls))
			for w := 0; w < conc && w < len(s.Calls); w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := atomic.AddInt64(&next, 1)
						if int(i) >= len(s.Calls) {
							return
						}
						call := s.Calls[i]
						body, err := call.bytes()
						if err != nil {
							panic(err)
						}
						_, d, err := c.do(call.Path, body)
						lats[i] = float64(d.Nanoseconds()) / 1e3
						if err != nil {
							mu.Lock()
							res.Errors++
							if res.FirstError == "" {
								res.FirstError = err.Error()
							}
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if record {
				sr := res.Steps[si]
				sr.ElapsedUS = append(sr.ElapsedUS, float64(time.Since(ts).Nanoseconds())/1e3)
				sr.LatenciesUS = append(sr.LatenciesUS, lats...)
			}
		}
		if record {
			res.TotalUS = append(res.TotalUS, float64(time.Since(tc).Nanoseconds())/1e3)
			res.Cycles++
		}
		if p.PeriodSeconds > 0 {
			time.Sleep(time.Until(tc.Add(time.Duration(p.PeriodSeconds * float64(time.Second)))))
		}
	}
	return res, nil
}

func main() {
	var p Plan
	if err := json.NewDecoder(os.Stdin).Decode(&p); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: bad plan:", err)
		os.Exit(2)
	}
	if p.Concurrency < 1 {
		p.Concurrency = 1
	}
	if p.MaxSeconds <= 0 {
		p.MaxSeconds = 30
	}
	if p.TimeoutSeconds <= 0 {
		p.TimeoutSeconds = 60
	}
	var out any
	var err error
	switch p.Mode {
	case "load":
		out, err = runLoad(p)
	case "cycle":
		out, err = runCycle(p)
	default:
		err = fmt.Errorf("unknown mode %q", p.Mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}
