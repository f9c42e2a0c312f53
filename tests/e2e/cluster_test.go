package e2e

// The cluster: etcd, kube-apiserver, Volcano's CRDs, fake nodes and a fake kubelet, then per
// scenario a Caldera sidecar and a vc-scheduler. Every process is started by this file, listens on
// 127.0.0.1 on a port picked free just before, keeps its state under one temporary directory and
// is stopped by PID (SIGTERM, then SIGKILL) when the test ends, whatever its outcome.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

const (
	volcanoModule = "volcano.sh/volcano@v1.14.1"
	adminToken    = "caldera-e2e-admin-token"
)

// proc is one child process owned by the harness.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Cluster is the API server side, shared by the scenarios.
type Cluster struct {
	Dir        string
	BinDir     string
	Server     string // https://127.0.0.1:PORT
	Kubeconfig string
	CAFile     string
	EtcdURL    string // etcd's client URL (http://127.0.0.1:PORT)
	Rest       *rest.Config
	Kube       kubernetes.Interface
	VC         vcclient.Interface

	mu      sync.Mutex
	procs   []*proc
	deleted map[string]time.Time // namespace/name of pods the fake kubelet finished deleting
	stopCh  chan struct{}
	apiArgs []string // kube-apiserver's, for StartAPIServer
	api     *proc
	apiRuns int
}

// freePort asks the kernel for a free port on loopback.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a program with its output in DIR/logs/NAME.log; the cluster stops it at the end.
func (c *Cluster) start(t testing.TB, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(c.Dir, "logs", name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("%s log: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so a Ctrl-C at the terminal reaches the harness only and the
	// harness decides the order of shutdown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

// Stop stops every process the harness started, newest first.
func (c *Cluster) Stop() {
	if c.stopCh != nil {
		close(c.stopCh)
		c.stopCh = nil
	}
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop()
	}
}

// tail returns the last lines of a process log, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 200 ms until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %s: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeCerts makes a CA and a serving certificate for 127.0.0.1 signed by it, and the service
// account signing key kube-apiserver insists on.
func writeCerts(dir string) error {
	key := func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }
	skid := func(k *rsa.PrivateKey) []byte {
		s := sha1.Sum(x509.MarshalPKCS1PublicKey(&k.PublicKey))
		return s[:]
	}
	writePEM := func(name, typ string, der []byte) error {
		return os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
	}
	now := time.Now()
	caKey, err := key()
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "caldera-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, SubjectKeyId: skid(caKey),
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := key()
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		SubjectKeyId: skid(srvKey), AuthorityKeyId: caCert.SubjectKeyId,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := key()
	if err != nil {
		return err
	}
	for _, w := range []struct {
		name, typ string
		der       []byte
	}{
		{"ca.crt", "CERTIFICATE", caDER},
		{"apiserver.crt", "CERTIFICATE", srvDER},
		{"apiserver.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(srvKey)},
		{"sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
	} {
		if err := writePEM(w.name, w.typ, w.der); err != nil {
			return err
		}
	}
	return nil
}

// e2eDir is tests/e2e (the package directory go test runs in).
func e2eDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// BuildBinaries builds etcd, kube-apiserver and vc-scheduler into binDir from the versions pinned in
// go.mod (etcd from the etcd/ module). Go's build cache makes a warm rebuild a link step.
func BuildBinaries(t testing.TB, binDir string) {
	t.Helper()
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	builds := []struct{ dir, out, pkg string }{
		{".", "vc-scheduler", "volcano.sh/volcano/cmd/scheduler"},
		{"etcd", "etcd", "go.etcd.io/etcd/server/v3"},
		{".", "kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"},
	}
	for _, b := range builds {
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg)
		cmd.Dir = filepath.Join(e2eDir(), b.dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s (in tests/e2e/%s): %v\n%s", b.pkg, b.dir, err, out)
		}
		t.Logf("built %s in %s", b.out, time.Since(start).Round(time.Second))
	}
}

// StartCluster starts etcd and kube-apiserver, installs Volcano's CRDs and starts the fake kubelet.
func StartCluster(t testing.TB, dir, binDir string) *Cluster {
	t.Helper()
	c := &Cluster{Dir: dir, BinDir: binDir, deleted: map[string]time.Time{}, stopCh: make(chan struct{})}
	for _, d := range []string{"logs", "etcd", "pki", "apiserver"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()

	// etcd
	clientPort, peerPort := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.EtcdURL = clientURL
	etcd := c.start(t, "etcd", nil, filepath.Join(binDir, "etcd"),
		"--name", "e2e", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e2e="+peerURL, "--log-level", "warn")
	if err := waitFor(30*time.Second, func() (bool, error) {
		if !etcd.running() {
			return false, fmt.Errorf("etcd exited:\n%s", tail(etcd.log, 20))
		}
		r, err := http.Get(clientURL + "/health")
		if err != nil {
			return false, err
		}
		r.Body.Close()
		return r.StatusCode == 200, nil
	}); err != nil {
		t.Fatalf("etcd: %v\n%s", err, tail(etcd.log, 20))
	}

	// kube-apiserver
	pki := filepath.Join(dir, "pki")
	if err := writeCerts(pki); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(pki, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,caldera-e2e-admin,caldera-e2e-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiPort := freePort(t)
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	c.CAFile = filepath.Join(pki, "ca.crt")
	c.apiArgs = []string{
		"--etcd-servers", clientURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort),
		"--tls-cert-file", filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file", filepath.Join(pki, "apiserver.key"),
		"--cert-dir", filepath.Join(dir, "apiserver"),
		"--token-auth-file", tokens,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://127.0.0.1",
		"--service-account-key-file", filepath.Join(pki, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24",
		// No controller manager runs, so nothing would create a namespace's default
		// ServiceAccount: pods are admitted without one.
		"--disable-admission-plugins", "ServiceAccount",
		"--endpoint-reconciler-type", "none",
		"--enable-priority-and-fairness=false",
		// ResourceQuotas are served from etcd, not the watch cache: a watch of them resumed from
		// a revision etcd has compacted ends 410 Gone, as a watch older than the cache's window
		// does in a busy cluster (stale-view-watch-expired; the cache's window cannot be
		// outrun in seconds here).
		"--watch-cache-sizes", "resourcequotas#0",
		"--profiling=false",
	}
	c.StartAPIServer(t)
	var err error
	if c.Kube, err = kubernetes.NewForConfig(c.Rest); err != nil {
		t.Fatal(err)
	}
	if c.VC, err = vcclient.NewForConfig(c.Rest); err != nil {
		t.Fatal(err)
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := c.writeKubeconfig(); err != nil {
		t.Fatal(err)
	}
	c.installCRDs(t)
	c.startFakeKubelet(t)
	ok = true
	return c
}

// StartAPIServer starts kube-apiserver (again: on the same port, etcd and certificates) and
// waits for its /readyz.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	c.apiRuns++
	name := "kube-apiserver"
	if c.apiRuns > 1 {
		name = fmt.Sprintf("kube-apiserver-%d", c.apiRuns)
	}
	api := c.start(t, name, nil, filepath.Join(c.BinDir, "kube-apiserver"), c.apiArgs...)
	c.api = api
	c.Rest = &rest.Config{
		Host: c.Server, BearerToken: adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile},
		QPS:             100, Burst: 200,
	}
	if err := waitFor(90*time.Second, func() (bool, error) {
		if !api.running() {
			return false, fmt.Errorf("kube-apiserver exited")
		}
		ca, err := os.ReadFile(c.CAFile)
		if err != nil {
			return false, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		req, _ := http.NewRequest("GET", c.Server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		r, err := cl.Do(req)
		if err != nil {
			return false, err
		}
		r.Body.Close()
		return r.StatusCode == 200, fmt.Errorf("readyz %d", r.StatusCode)
	}); err != nil {
		t.Fatalf("kube-apiserver: %v\n%s", err, tail(api.log, 30))
	}
}

// KillAPIServer kills kube-apiserver (SIGKILL, as a crash or the loss of its node would: every
// connection drops at once; on SIGTERM it drains for over 10 s) and waits for it to exit. etcd
// keeps the cluster's state for StartAPIServer.
func (c *Cluster) KillAPIServer(t testing.TB) {
	t.Helper()
	if err := c.api.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill kube-apiserver: %v", err)
	}
	<-c.api.done
}

func (c *Cluster) writeKubeconfig() error {
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return err
	}
	doc := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "caldera-e2e",
		"clusters": []any{map[string]any{"name": "caldera-e2e", "cluster": map[string]any{
			"server": c.Server, "certificate-authority-data": ca}}},
		"users": []any{map[string]any{"name": "admin", "user": map[string]any{"token": adminToken}}},
		"contexts": []any{map[string]any{"name": "caldera-e2e", "context": map[string]any{
			"cluster": "caldera-e2e", "user": "admin"}}},
	}
	b, err := yaml.Marshal(doc) // []byte marshals as base64, as a kubeconfig wants
	if err != nil {
		return err
	}
	return os.WriteFile(c.Kubeconfig, b, 0o600)
}

// volcanoModuleDir is Volcano's module in the module cache (downloaded by the build).
func volcanoModuleDir(t testing.TB) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano")
	cmd.Dir = e2eDir()
	out, err := cmd.Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("go list -m volcano.sh/volcano: %v", err)
	}
	return string(bytes.TrimSpace(out))
}

// installCRDs creates every CRD of Volcano v1.14.1's config/crd/volcano/bases, read from the module
// cache (the scheduler watches PodGroups, Queues, HyperNodes, NUMA topologies and more).
func (c *Cluster) installCRDs(t testing.TB) {
	t.Helper()
	dir := filepath.Join(volcanoModuleDir(t), "config", "crd", "volcano", "bases")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under %s (%v)", dir, err)
	}
	cl, err := apiextclient.NewForConfig(c.Rest)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := cl.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create CRD %s: %v", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	for _, n := range names {
		if err := waitFor(30*time.Second, func() (bool, error) {
			crd, err := cl.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("CRD %s not established: %v", n, err)
		}
	}
	t.Logf("installed %d Volcano CRDs from %s", len(names), dir)
}

// startFakeKubelet does the two things a kubelet would do that Volcano relies on: a pod bound to
// a node is reported Running (phase, start time, Ready condition) — Volcano's preempt action only
// picks Running pods as victims — and a deleted pod (deletionTimestamp set) is removed for good,
// as the kubelet does once the containers are gone. Nothing runs.
func (c *Cluster) startFakeKubelet(t testing.TB) {
	factory := informers.NewSharedInformerFactory(c.Kube, 0)
	inf := factory.Core().V1().Pods().Informer()
	handle := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return
		}
		ctx := context.Background()
		if pod.DeletionTimestamp != nil {
			zero := int64(0)
			// Retried: no later event would bring a terminating pod back to this handler, so a
			// delete dropped here left it terminating for good (its preemptor pending behind it).
			var err error
			for attempt := 0; attempt < 5; attempt++ {
				err = c.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if err == nil || apierrors.IsNotFound(err) {
					break
				}
				time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("fake kubelet: %s/%s: removing the deleted pod: %v", pod.Namespace, pod.Name, err)
			}
			if err == nil || apierrors.IsNotFound(err) {
				c.mu.Lock()
				if _, seen := c.deleted[pod.Namespace+"/"+pod.Name]; !seen {
					c.deleted[pod.Namespace+"/"+pod.Name] = time.Now()
				}
				c.mu.Unlock()
			}
			return
		}
		if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
			return
		}
		p := pod.DeepCopy()
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		if p.Status.StartTime == nil {
			p.Status.StartTime = &now
		}
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
		if _, err := c.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Logf("fake kubelet: %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	factory.Start(c.stopCh)
	factory.WaitForCacheSync(c.stopCh)
}

// Deleted reports whether the fake kubelet removed the pod (an eviction, in these scenarios).
func (c *Cluster) Deleted(ns, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.deleted[ns+"/"+name]
	return ok
}

// NodeSpec is a fake node: capacity and labels; no kubelet behind it.
type NodeSpec struct {
	Name   string
	CPU    string
	Memory string
	Labels map[string]string
}

// CreateNodes creates Node objects and sets their status (capacity, allocatable, Ready) through
// the status subresource, as a kubelet would.
func (c *Cluster) CreateNodes(t testing.TB, nodes ...NodeSpec) {
	t.Helper()
	for _, n := range nodes {
		if err := createNode(context.Background(), c.Kube, n); err != nil {
			t.Fatal(err)
		}
	}
}

// createNode is CreateNodes for one node, through any client (the scale benchmark's bulk one).
func createNode(ctx context.Context, kube kubernetes.Interface, n NodeSpec) error {
	labels := map[string]string{"kubernetes.io/hostname": n.Name, "caldera-e2e": "true"}
	for k, v := range n.Labels {
		labels[k] = v
	}
	node, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(n.CPU),
		corev1.ResourceMemory: resource.MustParse(n.Memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	node.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
	}
	if node, err = kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", n.Name, err)
	}
	// The API server's TaintNodesByCondition admission gives a new node the not-ready taint;
	// the node lifecycle controller (kube-controller-manager, not run here) removes it once
	// the node reports Ready. Do the same.
	node.Spec.Taints = nil
	if _, err := kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s taints: %w", n.Name, err)
	}
	return nil
}
