package suite

// clusterAPI stands in for the API server that Caldera's `sessionState: cluster` lists and
// watches (app/cluster_state/store.py, COLLECTIONS: pods, nodes, podgroups, queues,
// resourcequotas, priorityclasses), serving one scenario's Cluster: each LIST is answered with
// the objects the mock cache is given, and each WATCH is an open stream that sends nothing, as a
// quiet cluster's does. The Python tests' stand-in is tests/cluster_api.py.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type clusterAPI struct {
	URL   string
	lists map[string][]metav1.Object // collection path -> objects
	kinds map[string]string          // collection path -> list kind
}

// startClusterAPI serves cl's objects. A pod without spec.schedulerName is served as
// vc-scheduler's ("volcano"): the mock cache takes every pod it is given as its own, where the API
// server would have defaulted the field and the cache kept only its scheduler's pending pods.
func startClusterAPI(t *testing.T, cl Cluster) *clusterAPI {
	t.Helper()
	a := &clusterAPI{lists: map[string][]metav1.Object{}, kinds: map[string]string{}}
	add := func(path, kind string, obj metav1.Object) {
		if obj.GetResourceVersion() == "" {
			obj.SetResourceVersion("5")
		}
		a.lists[path] = append(a.lists[path], obj)
		a.kinds[path] = kind
	}
	collections := []struct{ path, kind string }{
		{"/api/v1/pods", "PodList"},
		{"/api/v1/nodes", "NodeList"},
		{"/apis/scheduling.volcano.sh/v1beta1/podgroups", "PodGroupList"},
		{"/apis/scheduling.volcano.sh/v1beta1/queues", "QueueList"},
		{"/api/v1/resourcequotas", "ResourceQuotaList"},
		{"/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClassList"},
	}
	for _, c := range collections {
		a.lists[c.path], a.kinds[c.path] = []metav1.Object{}, c.kind
	}
	for _, p := range cl.Pods {
		p = p.DeepCopy()
		if p.Spec.SchedulerName == "" {
			p.Spec.SchedulerName = "volcano"
		}
		add(collections[0].path, collections[0].kind, p)
	}
	for _, n := range cl.Nodes {
		add(collections[1].path, collections[1].kind, n.DeepCopy())
	}
	for _, pg := range cl.PodGroups {
		add(collections[2].path, collections[2].kind, pg.DeepCopy())
	}
	for _, q := range cl.Queues {
		add(collections[3].path, collections[3].kind, q.DeepCopy())
	}
	for _, rq := range cl.ResourceQuotas {
		add(collections[4].path, collections[4].kind, rq.DeepCopy())
	}
	for _, pc := range cl.PriClasses {
		add(collections[5].path, collections[5].kind, pc.DeepCopy())
	}
	server := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(server.Close)
	a.URL = server.URL
	return a
}

func (a *clusterAPI) serve(w http.ResponseWriter, req *http.Request) {
	items, known := a.lists[req.URL.Path]
	if !known {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","code":404,"message":%q}`, req.URL.Path+" is not served here")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if q := req.URL.Query().Get("watch"); q == "1" || q == "true" {
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-req.Context().Done() // a quiet stream, until the client goes away
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]interface{}{
		"kind":     a.kinds[req.URL.Path],
		"metadata": map[string]string{"resourceVersion": "7"},
		"items":    items,
	})
}

// kubeconfig writes a kubeconfig naming the stand-in and returns its path.
func (a *clusterAPI) kubeconfig(t *testing.T) string {
	t.Helper()
	doc := map[string]interface{}{
		"apiVersion": "v1", "kind": "Config", "current-context": "conformance",
		"contexts": []interface{}{map[string]interface{}{"name": "conformance",
			"context": map[string]string{"cluster": "local", "user": "suite"}}},
		"clusters": []interface{}{map[string]interface{}{"name": "local",
			"cluster": map[string]string{"server": a.URL}}},
		"users": []interface{}{map[string]interface{}{"name": "suite", "user": map[string]string{"token": "t"}}},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
