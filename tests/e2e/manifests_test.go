package e2e

// manifests: every Kubernetes overlay we ship (deploy/kubernetes/volcano-v*, one per Volcano
// release), and each native-sidecar overlay also with the plain-container component (the
// documented variant for Kubernetes before 1.29), rendered by kustomize built from its Go module
// and applied to the real API server with a server-side dry run: every object passes the API
// server's own validation and admission (the native sidecar's init container with restartPolicy
// Always included) without being created.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

const (
	kustomizeModule  = "sigs.k8s.io/kustomize/kustomize/v5@" + kustomizeVersion
	kustomizeVersion = "v5.8.0"
)

// volcanoRaw is how an overlay names its release's manifest; the test hands kustomize the same
// file from the published volcano.sh/volcano module of that tag (no network beyond the module
// proxy).
var volcanoRaw = regexp.MustCompile(`https://raw\.githubusercontent\.com/volcano-sh/volcano/(v[0-9.]+)/(\S+)`)

func testManifests(t *testing.T, c *Cluster) {
	ctx := context.Background()
	// One directory per pinned version, so a new pin is built rather than an old binary reused.
	gobin := filepath.Join(c.BinDir, "kustomize-"+kustomizeVersion)
	kustomize := filepath.Join(gobin, "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		cmd := exec.Command("go", "install", kustomizeModule)
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install %s: %v\n%s", kustomizeModule, err, out)
		}
	}
	work := t.TempDir()
	kubernetes := filepath.Join(e2eDir(), "..", "..", "deploy", "kubernetes")
	if out, err := exec.Command("cp", "-r", kubernetes, work).CombinedOutput(); err != nil {
		t.Fatalf("copy the overlays: %v\n%s", err, out)
	}
	tree := filepath.Join(work, "kubernetes")
	overlays, err := filepath.Glob(filepath.Join(tree, "volcano-v*"))
	if err != nil || len(overlays) == 0 {
		t.Fatalf("no overlay under deploy/kubernetes: %v", err)
	}
	type variant struct {
		dir   string
		plain bool // Caldera is a plain container
	}
	var variants []variant
	for _, overlay := range overlays {
		plain := localize(t, overlay)
		variants = append(variants, variant{overlay, plain})
		if !plain {
			// The documented variant for Kubernetes before 1.29: the overlay plus ../plain-container.
			dir := overlay + "+plain-container"
			text := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
				"resources:\n- ../%s\ncomponents:\n- ../plain-container\n", filepath.Base(overlay))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			variants = append(variants, variant{dir, true})
		}
	}

	// Namespaced objects need their namespace to exist, even in a dry run (admission checks it).
	for _, ns := range []string{"volcano-system", "volcano-monitoring"} {
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(c.Rest)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c.Rest)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, v := range variants {
		t.Run(filepath.Base(v.dir), func(t *testing.T) {
			out, err := exec.Command(kustomize, "build", v.dir).CombinedOutput()
			if err != nil {
				t.Fatalf("kustomize build: %v\n%s", err, out)
			}
			applied, shape := 0, ""
			for _, doc := range strings.Split(string(out), "\n---\n") {
				if strings.TrimSpace(doc) == "" {
					continue
				}
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
					t.Fatalf("rendered object: %v", err)
				}
				gvk := obj.GroupVersionKind()
				mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s %s: %v", gvk.Kind, obj.GetName(), err)
					continue
				}
				var res dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
				if ns := obj.GetNamespace(); ns != "" {
					res = dyn.Resource(mapping.Resource).Namespace(ns)
				}
				_, err = res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
					FieldManager: "caldera-e2e", Force: true, DryRun: []string{metav1.DryRunAll},
				})
				if err != nil {
					t.Errorf("server-side dry run of %s %s/%s: %v", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
					continue
				}
				applied++
				if gvk.Kind == "Deployment" && obj.GetName() == "volcano-scheduler" {
					shape = calderaShape(obj)
				}
			}
			t.Logf("%d objects accepted by the API server (dry run); caldera: %s", applied, shape)
			if applied < 20 {
				t.Errorf("only %d objects applied: the rendering lost objects", applied)
			}
			want := "native sidecar"
			if v.plain {
				want = "plain container"
			}
			if shape != want {
				t.Errorf("the volcano-scheduler Deployment runs caldera as %q, want %q", shape, want)
			}
		})
	}
}

// localize replaces the Volcano release URL an overlay names with the same file from the
// published module, and tells whether the overlay lists the plain-container component.
func localize(t *testing.T, overlay string) bool {
	t.Helper()
	kustomization := filepath.Join(overlay, "kustomization.yaml")
	text, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	urls := volcanoRaw.FindAllStringSubmatch(string(text), -1)
	if len(urls) != 1 {
		t.Fatalf("%s names %d Volcano release manifests, want 1", overlay, len(urls))
	}
	tag, path := urls[0][1], urls[0][2]
	out, err := exec.Command("go", "mod", "download", "-json", "volcano.sh/volcano@"+tag).Output()
	if err != nil {
		t.Fatalf("go mod download volcano.sh/volcano@%s: %v", tag, err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(module.Dir, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "upstream.yaml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	local := strings.Replace(string(text), urls[0][0], "upstream.yaml", 1)
	if err := os.WriteFile(kustomization, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(text), "- ../plain-container")
}

// calderaShape: how the rendered Deployment runs the caldera container.
func calderaShape(obj *unstructured.Unstructured) string {
	for _, field := range []string{"initContainers", "containers"} {
		list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", field)
		for _, item := range list {
			m, _ := item.(map[string]interface{})
			if m["name"] != "caldera" {
				continue
			}
			_, startup := m["startupProbe"]
			switch {
			case field == "initContainers" && m["restartPolicy"] == "Always" && startup:
				return "native sidecar"
			case field == "containers" && m["restartPolicy"] == nil && !startup:
				return "plain container"
			}
			return fmt.Sprintf("%s entry %v", field, m["restartPolicy"])
		}
	}
	return "absent"
}
