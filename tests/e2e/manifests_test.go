package e2e

// manifests: the Kubernetes overlay we ship (deploy/kubernetes/volcano-v1.15.1), rendered by
// kustomize built from its Go module, applied to the real API server with a server-side dry
// run: every object passes the API server's own validation and admission (the native sidecar's
// init container with restartPolicy Always included) without being created.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	kustomizeModule = "sigs.k8s.io/kustomize/kustomize/v5@v5.8.0"
	overlayRelease  = "volcano.sh/volcano@v1.15.1"
	overlayURL      = "https://raw.githubusercontent.com/volcano-sh/volcano/v1.15.1/installer/volcano-development.yaml"
)

func testManifests(t *testing.T, c *Cluster) {
	ctx := context.Background()
	kustomize := filepath.Join(c.BinDir, "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		cmd := exec.Command("go", "install", kustomizeModule)
		cmd.Env = append(os.Environ(), "GOBIN="+c.BinDir, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install %s: %v\n%s", kustomizeModule, err, out)
		}
	}
	// The overlay names Volcano's manifest by its release URL; hand kustomize the same file
	// from the published module instead (no network beyond the module proxy).
	out, err := exec.Command("go", "mod", "download", "-json", overlayRelease).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", overlayRelease, err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	kubernetes := filepath.Join(e2eDir(), "..", "..", "deploy", "kubernetes")
	if out, err := exec.Command("cp", "-r", kubernetes, work).CombinedOutput(); err != nil {
		t.Fatalf("copy the overlay: %v\n%s", err, out)
	}
	overlay := filepath.Join(work, "kubernetes", "volcano-v1.15.1")
	manifest, err := os.ReadFile(filepath.Join(module.Dir, "installer", "volcano-development.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "volcano-development.yaml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	kustomization := filepath.Join(overlay, "kustomization.yaml")
	text, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte(overlayURL)) {
		t.Fatalf("the overlay no longer names %s: update this test", overlayURL)
	}
	if err := os.WriteFile(kustomization, bytes.ReplaceAll(text, []byte(overlayURL), []byte("volcano-development.yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered, err := exec.Command(kustomize, "build", overlay).Output()
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
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
	applied, sidecar := 0, false
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
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
			inits, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "initContainers")
			for _, ic := range inits {
				m, _ := ic.(map[string]interface{})
				sidecar = sidecar || (m["name"] == "caldera" && m["restartPolicy"] == "Always")
			}
		}
	}
	t.Logf("%d objects accepted by the API server (dry run)", applied)
	if applied < 20 {
		t.Errorf("only %d objects applied: the rendering lost objects", applied)
	}
	if !sidecar {
		t.Errorf("the volcano-scheduler Deployment has no caldera native sidecar")
	}
}
