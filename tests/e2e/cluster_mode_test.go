package e2e

// sessionState as a scenario parameter: a scenario written for Volcano's snapshot runs unchanged
// with Caldera deriving the session's state from the API server (sessionState: cluster), and must
// make the same decisions. In that mode vc-scheduler runs with the extender entry `caldera
// volcano-config` prints for it, which has no onSessionOpenVerb: Volcano never marshals its
// snapshot, and Caldera opens each session at its first call on the objects it watches.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scenarioName is the scenario's name (its namespace) in mode: the snapshot keeps the name.
func scenarioName(name, mode string) string {
	if mode == "snapshot" {
		return name
	}
	return name + "-" + mode + "-state"
}

// withSessionState sets sessionState in a scenario's Caldera configuration (its first line is
// volcanoVersion); the watched cluster is the scenario's API server. The identifiers mode is
// Caldera in cluster mode (identifiers_mode_test.go).
func withSessionState(config, mode string) string {
	if mode == "snapshot" {
		return config
	}
	if mode == identifiersMode {
		mode = "cluster"
	}
	first, rest, _ := strings.Cut(config, "\n")
	return first + "\nsessionState: " + mode + "\nsessionStateKubeconfig: \"{{KUBECONFIG}}\"\n" + rest
}

// modeOptions are the scenario options of a mode: in the identifiers mode, vc-scheduler built
// with protocol/volcano-identifiers's patch, the entry `caldera volcano-config --bodies
// identifiers` prints, and the harness's proxy between them recording what goes on the wire.
func modeOptions(mode string) scenarioOptions {
	if mode == identifiersMode {
		return scenarioOptions{bodies: identifiersBodies, viaProxy: true}
	}
	return scenarioOptions{}
}

// checkSessionState checks, after a scenario ran in cluster mode, that its decisions did come
// from the derived state: vc-scheduler's extender entry had no onSessionOpenVerb, Caldera
// received no snapshot, opened its sessions from the cluster, and answered no verb without one.
//
// In the identifiers mode (vc-scheduler built with protocol/volcano-identifiers's patch) the
// same, except that onSessionOpen carries the session's roster, and checkIdentifiers proves the
// identifiers protocol was the one used.
func checkSessionState(t *testing.T, s *Scenario, mode string) {
	t.Helper()
	switch mode {
	case "cluster":
		if entry := s.Caldera.VolcanoConfig(t, s.Caldera.URL, false); strings.Contains(entry, "onSessionOpenVerb") ||
			!strings.Contains(entry, "extender.onSessionCloseVerb") || !strings.Contains(entry, "extender.allocateFuncVerb") {
			t.Errorf("caldera volcano-config in cluster mode printed:\n%s\nwant onSessionClose and allocate, no onSessionOpen", entry)
		}
		if n := s.Caldera.metric(t, "caldera_responses_total", `verb="onSessionOpen"`); n != 0 {
			t.Errorf("Caldera answered %v onSessionOpen calls in cluster mode, want none", n)
		}
	case identifiersMode:
		checkIdentifiers(t, s)
	default:
		return
	}
	if n := s.Caldera.metric(t, "caldera_verbs_without_session_total"); n != 0 {
		t.Errorf("Caldera answered %v calls without a session in cluster mode", n)
	}
	samples, err := scrape(s.Caldera.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	opened, derived := samples["caldera_sessions_opened_total"], samples["caldera_session_state_derive_seconds_count"]
	if opened < 2 || derived != opened {
		t.Errorf("sessions opened %v, derived from the cluster %v: want several, every one derived", opened, derived)
	}
	r, err := http.Get(s.Caldera.URL + "/debug/session")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var debug struct {
		SessionState struct {
			Mode    string
			Synced  bool
			Objects map[string]int
		} `json:"sessionState"`
	}
	if err := json.NewDecoder(r.Body).Decode(&debug); err != nil {
		t.Fatal(err)
	}
	state := debug.SessionState
	quotas, err := s.C.Kube.CoreV1().ResourceQuotas(s.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if state.Mode != "cluster" || !state.Synced || state.Objects["pods"] < 3 || state.Objects["podgroups"] < 1 ||
		state.Objects["quotas"] < len(quotas.Items) || state.Objects["nodes"] < len(s.nodes) {
		t.Errorf("/debug/session sessionState: %+v, want cluster mode, synced, this scenario's objects", state)
	}
	t.Logf("cluster mode: %v sessions derived from %v", derived, state.Objects)
}
