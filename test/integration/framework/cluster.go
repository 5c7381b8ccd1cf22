package framework

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/controllermanager"
)

// Users the API servers know, by bearer token. AdminUser is in
// system:masters; RestrictedUser has no RBAC permissions at all, for tests
// of refused credentials; CourierUser has only what Courier's shipped RBAC
// grants (ManagerRBAC, WorkerRBAC), and is who Courier runs as.
const (
	AdminUser      = "admin"
	RestrictedUser = "restricted"
	CourierUser    = "courier"
)

const readyTimeout = 60 * time.Second

// Scheme is Courier's scheme plus the CRD type the framework installs.
var Scheme = func() *runtime.Scheme {
	s := controllermanager.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// StartTimeout bounds Start: building, starting and loading CRDs into every
// cluster of an environment.
const StartTimeout = 3 * time.Minute

// StopTimeout bounds how long a test waits for something it started, such
// as a controller manager, to stop.
const StopTimeout = 30 * time.Second

// Cluster is one control plane: etcd, kube-apiserver, and
// kube-controller-manager running only its garbage collector and namespace
// controller, so that owned objects and deleted namespaces go as they do in
// real clusters.
type Cluster struct {
	// Name identifies the cluster in logs and in its directory.
	Name string
	// Dir holds the cluster's data, certificates and process logs.
	Dir string
	// Config is an admin rest.Config for the cluster.
	Config *rest.Config
	// Client is an admin client with Courier's scheme.
	Client client.Client

	host   string
	pki    *pki
	tokens map[string]string
	etcd   *process
	api    *process
	kcm    *process
	// extraAPIServerArgs are kept to start the cluster again on new ports.
	extraAPIServerArgs []string
}

func newCluster(name, dir string, bins binaries, extraAPIServerArgs []string) (*Cluster, error) {
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		return nil, fmt.Errorf("creating cluster directory: %w", err)
	}
	p, err := writePKI(dir)
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c := &Cluster{
		Name:               name,
		Dir:                dir,
		extraAPIServerArgs: extraAPIServerArgs,
		host:               "https://127.0.0.1:" + strconv.Itoa(ports[2]),
		pki:                p,
		tokens:             map[string]string{AdminUser: randomToken(), RestrictedUser: randomToken(), CourierUser: randomToken()},
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	tokens := fmt.Sprintf("%s,%s,%s-uid,\"system:masters\"\n", c.tokens[AdminUser], AdminUser, AdminUser)
	for _, user := range []string{RestrictedUser, CourierUser} {
		tokens += fmt.Sprintf("%s,%s,%s-uid\n", c.tokens[user], user, user)
	}
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return nil, fmt.Errorf("writing token file: %w", err)
	}
	c.etcd = &process{
		name:    name + "/etcd",
		path:    bins.etcd,
		logPath: filepath.Join(dir, "etcd.log"),
		args: []string{
			"--name=default",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + etcdURL,
			"--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			// Test data need not survive a power cut; fsync dominates start-up.
			"--unsafe-no-fsync=true",
		},
	}
	c.api = &process{
		name:    name + "/kube-apiserver",
		path:    bins.apiserver,
		logPath: filepath.Join(dir, "kube-apiserver.log"),
		args: append([]string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			// Nothing reaches the API server through the kubernetes
			// Service here, and the default lease reconciler refuses a
			// loopback address (from v1.37 kube-apiserver exits on it).
			"--endpoint-reconciler-type=none",
			"--secure-port=" + strconv.Itoa(ports[2]),
			"--cert-dir=" + dir,
			"--tls-cert-file=" + p.certFile,
			"--tls-private-key-file=" + p.keyFile,
			"--token-auth-file=" + tokenFile,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + p.saPubFile,
			"--service-account-signing-key-file=" + p.saKeyFile,
			"--service-cluster-ip-range=10.0.0.0/24",
			// No controller-manager creates default ServiceAccounts here.
			"--disable-admission-plugins=ServiceAccount",
			"--allow-privileged=true",
		}, extraAPIServerArgs...),
	}
	kcmKubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	c.kcm = &process{
		name:    name + "/kube-controller-manager",
		path:    bins.controllerManager,
		logPath: filepath.Join(dir, "kube-controller-manager.log"),
		args: []string{
			"--kubeconfig=" + kcmKubeconfig,
			"--controllers=garbagecollector,namespace",
			"--leader-elect=false",
			// Nothing here scrapes it; no port to find.
			"--secure-port=0",
		},
	}
	c.Config = c.RestConfig(AdminUser)
	if err := c.WriteKubeconfig(AdminUser, kcmKubeconfig); err != nil {
		return nil, err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: Scheme}); err != nil {
		return nil, fmt.Errorf("creating client of %s: %w", name, err)
	}
	return c, nil
}

// lostPort reports whether etcd or the API server failed because another
// process held its port.
func (c *Cluster) lostPort() bool {
	for _, p := range []*process{c.etcd, c.api} {
		if data, err := os.ReadFile(p.logPath); err == nil && bytes.Contains(data, []byte("address already in use")) {
			return true
		}
	}
	return false
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.etcd.start(); err != nil {
		return err
	}
	if err := c.StartAPIServer(ctx); err != nil {
		return err
	}
	// An etcd that lost its port to another cluster's etcd exits at once,
	// and the API server is then ready on the other's: two clusters with
	// one store.
	if c.etcd.exited() {
		return fmt.Errorf("%s exited; see %s", c.etcd.name, c.etcd.logPath)
	}
	return c.kcm.start()
}

// StartAPIServer starts the API server, on its old address and
// certificates if it ran before, and waits until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	if err := c.api.start(); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// APIServerRunning reports whether the API server process is up.
func (c *Cluster) APIServerRunning() bool {
	return c.api.pid() != 0
}

// StopAPIServer stops the API server process by PID and leaves etcd up, so
// that the cluster looks unreachable and comes back with its data.
func (c *Cluster) StopAPIServer() error {
	return c.api.stop()
}

// PauseAPIServer stops the API server process with SIGSTOP: it keeps its
// sockets open but answers nothing, like a hung server.
func (c *Cluster) PauseAPIServer() error {
	return c.api.signal(syscall.SIGSTOP)
}

// ResumeAPIServer undoes PauseAPIServer.
func (c *Cluster) ResumeAPIServer() error {
	return c.api.signal(syscall.SIGCONT)
}

// PIDs returns the PIDs of the cluster's running processes.
func (c *Cluster) PIDs() []int {
	var pids []int
	for _, p := range []*process{c.etcd, c.api, c.kcm} {
		if pid := p.pid(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (c *Cluster) stop() error {
	return errors.Join(c.kcm.stop(), c.api.stop(), c.etcd.stop())
}

func (c *Cluster) waitReady(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating health client of %s: %w", c.Name, err)
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		if c.api.exited() {
			return false, fmt.Errorf("%s exited; see %s", c.api.name, c.api.logPath)
		}
		_, lastErr = dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be ready (last error: %v): %w", c.api.name, lastErr, err)
	}
	return nil
}

// RestConfig returns a rest.Config for one of the known users.
func (c *Cluster) RestConfig(user string) *rest.Config {
	return &rest.Config{
		Host:            c.host,
		BearerToken:     c.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM},
		QPS:             1000,
		Burst:           2000,
		Timeout:         30 * time.Second,
	}
}

// Kubeconfig returns a self-contained kubeconfig for one of the known users,
// as a worker's kubeconfig Secret would hold it.
func (c *Cluster) Kubeconfig(user string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: c.tokens[user]}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	cfg.CurrentContext = c.Name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("writing kubeconfig of %s: %w", c.Name, err)
	}
	return data, nil
}

// handedOut are the ports FreePorts returned in this process: a port
// closed again is free, and the next call may get it back while the
// cluster it went to has not bound it yet.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts returns n loopback ports free at the time of the call, none
// returned before in this process.
func FreePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	ports := make([]int, 0, n)
	listeners := []net.Listener{}
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		// Held open until the end, so that it is not offered again here.
		listeners = append(listeners, l)
		if port := l.Addr().(*net.TCPAddr).Port; !handedOut.ports[port] {
			handedOut.ports[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateNamespace creates a namespace named prefix plus a random suffix.
func (c *Cluster) CreateNamespace(ctx context.Context, prefix string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Client.Create(ctx, ns); err != nil {
		return nil, fmt.Errorf("creating namespace on %s: %w", c.Name, err)
	}
	return ns, nil
}

// Discovery returns an admin discovery client for the cluster.
func (c *Cluster) Discovery() discovery.DiscoveryInterface {
	return discovery.NewDiscoveryClientForConfigOrDie(c.Config)
}

// FreeAddress returns a loopback address with a port free at the time of
// the call, for servers a test starts.
func FreeAddress() (string, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// WriteKubeconfig writes the kubeconfig of one of the known users to path,
// for a process that takes --kubeconfig.
func (c *Cluster) WriteKubeconfig(user, path string) error {
	data, err := c.Kubeconfig(user)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig of %s: %w", c.Name, err)
	}
	return nil
}
