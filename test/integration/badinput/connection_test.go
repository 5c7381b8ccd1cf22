package badinput

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	courierv1alpha1 "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/cluster"
	couriertesting "github.com/courierdev/courier/pkg/testing/courier"
	"github.com/courierdev/courier/test/integration/framework"
)

// kubeconfigCase is a kubeconfig Secret Courier must refuse.
type kubeconfigCase struct {
	// mutate spoils the first worker's good kubeconfig for Courier's user;
	// raw, when set, is the Secret's whole value instead.
	mutate func(*clientcmdapi.Config)
	raw    []byte
	// key is the Secret key the kubeconfig goes under ("kubeconfig" if
	// empty); the WorkerCluster always reads "kubeconfig".
	key     string
	reason  string
	message string
	// timeout is how long Courier may take to find out.
	timeout time.Duration
	// fromWorker: the worker's answer shows the fault, not the Secret's
	// content, so the message names the worker's reply, not the Secret.
	fromWorker bool
}

// badWorkerCluster creates a WorkerCluster whose Secret holds data under
// key, both removed when the spec ends.
func badWorkerCluster(ctx context.Context, key string, data []byte) *courierv1alpha1.WorkerCluster {
	GinkgoHelper()
	name := "bad-" + rand.String(6)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: courier.Namespace}, Data: map[string][]byte{key: data}}
	Expect(env.Manager.Client.Create(ctx, secret)).To(Succeed())
	wc := couriertesting.MakeWorkerCluster(name).Obj()
	Expect(env.Manager.Client.Create(ctx, wc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, wc))).To(Succeed())
		Expect(client.IgnoreNotFound(env.Manager.Client.Delete(ctx, secret))).To(Succeed())
	})
	return wc
}

// goodKubeconfig is the first worker's kubeconfig for Courier's user,
// parsed.
func goodKubeconfig() *clientcmdapi.Config {
	GinkgoHelper()
	data, err := env.Workers[0].Kubeconfig(framework.CourierUser)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

// onCluster and onUser change the kubeconfig's only cluster or user.
func onCluster(f func(*clientcmdapi.Cluster)) func(*clientcmdapi.Config) {
	return func(cfg *clientcmdapi.Config) {
		for _, c := range cfg.Clusters {
			f(c)
		}
	}
}

func onUser(f func(*clientcmdapi.AuthInfo)) func(*clientcmdapi.Config) {
	return func(cfg *clientcmdapi.Config) {
		for _, u := range cfg.AuthInfos {
			f(u)
		}
	}
}

var _ = DescribeTable("A WorkerCluster whose kubeconfig Secret is bad",
	func(ctx context.Context, c kubeconfigCase) {
		data := c.raw
		if c.mutate != nil {
			cfg := goodKubeconfig()
			c.mutate(cfg)
			var err error
			data, err = clientcmd.Write(*cfg)
			Expect(err).NotTo(HaveOccurred())
		}
		key := c.key
		if key == "" {
			key = "kubeconfig"
		}
		wc := badWorkerCluster(ctx, key, data)
		timeout := c.timeout
		if timeout == 0 {
			timeout = 30 * time.Second
		}

		got := &courierv1alpha1.WorkerCluster{}
		Eventually(func(g Gomega) {
			g.Expect(env.Manager.Client.Get(ctx, client.ObjectKeyFromObject(wc), got)).To(Succeed())
			active := meta.FindStatusCondition(got.Status.Conditions, courierv1alpha1.WorkerClusterActive)
			g.Expect(active).NotTo(BeNil())
			g.Expect(active.Status).To(Equal(metav1.ConditionFalse), "Active: %+v", active)
			g.Expect(active.Reason).To(Equal(c.reason), "Active: %+v", active)
			g.Expect(active.Message).To(ContainSubstring(c.message))
			if !c.fromWorker {
				// The Secret holding the bad kubeconfig is the object to fix.
				g.Expect(active.Message).To(ContainSubstring("Secret " + courier.Namespace + "/" + wc.Name))
			}
		}).WithTimeout(timeout).Should(Succeed())
		if c.reason != courierv1alpha1.ReasonUnreachable {
			Expect(got.Status.DisconnectedSince).To(BeNil(), "a configuration error on a worker never Active loses no jobs")
		}
		_, err := courier.Cache.Get(wc.Name)
		Expect(err).To(MatchError(cluster.ErrNotConnected))

		By("recording a Connect event with the reason")
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(ctx, g, "", "WorkerCluster", wc.Name, c.reason)).To(ContainElement(ContainSubstring(c.message)))
		}).Should(Succeed())
	},
	Entry("not YAML at all", kubeconfigCase{raw: []byte("\x00\x01{ this is not a kubeconfig"),
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "The kubeconfig does not parse"}),
	Entry("an empty value", kubeconfigCase{raw: []byte{},
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "has no current context; set current-context"}),
	Entry("no current context", kubeconfigCase{mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "" },
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "has no current context; set current-context to one of its contexts"}),
	Entry("a current context it does not define", kubeconfigCase{mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "elsewhere" },
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "has no current context"}),
	Entry("a context naming an undefined cluster", kubeconfigCase{mutate: func(c *clientcmdapi.Config) {
		for _, kctx := range c.Contexts {
			kctx.Cluster = "gone"
		}
	}, reason: courierv1alpha1.ReasonInvalidKubeconfig, message: `names cluster "gone", which the kubeconfig does not define`}),
	Entry("a context naming an undefined user", kubeconfigCase{mutate: func(c *clientcmdapi.Config) {
		for _, kctx := range c.Contexts {
			kctx.AuthInfo = "nobody"
		}
	}, reason: courierv1alpha1.ReasonInvalidKubeconfig, message: `names user "nobody", which the kubeconfig does not define`}),
	Entry("no server address", kubeconfigCase{mutate: onCluster(func(c *clientcmdapi.Cluster) { c.Server = "" }),
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "has no server address"}),
	Entry("a file for the CA", kubeconfigCase{mutate: onCluster(func(c *clientcmdapi.Cluster) {
		c.CertificateAuthorityData, c.CertificateAuthority = nil, "/etc/worker/ca.crt"
	}), reason: courierv1alpha1.ReasonInvalidKubeconfig, message: `references the file "/etc/worker/ca.crt" for its CA; embed it in certificate-authority-data`}),
	Entry("a file for the client certificate", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) {
		u.Token, u.ClientCertificate, u.ClientKeyData = "", "/etc/worker/tls.crt", []byte("key")
	}), reason: courierv1alpha1.ReasonInvalidKubeconfig, message: `references the file "/etc/worker/tls.crt" for its client certificate; embed it in client-certificate-data`}),
	Entry("a file for the client key", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) {
		u.Token, u.ClientCertificateData, u.ClientKey = "", []byte("cert"), "/etc/worker/tls.key"
	}), reason: courierv1alpha1.ReasonInvalidKubeconfig, message: `references the file "/etc/worker/tls.key" for its client key; embed it in client-key-data`}),
	Entry("a token file", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) { u.Token, u.TokenFile = "", "/var/run/token" }),
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: `references the token file "/var/run/token"; put the token itself in the token field`}),
	Entry("an exec plugin", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) {
		u.Token, u.Exec = "", &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token"}, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}), reason: courierv1alpha1.ReasonPluginNotAllowed, message: `runs the exec plugin "aws", which the Configuration does not allow`}),
	Entry("an auth-provider plugin", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) {
		u.Token, u.AuthProvider = "", &clientcmdapi.AuthProviderConfig{Name: "oidc"}
	}), reason: courierv1alpha1.ReasonPluginNotAllowed, message: `uses the auth-provider "oidc", which Courier does not run`}),
	Entry("basic auth", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) { u.Token, u.Username, u.Password = "", "admin", "secret" }),
		reason: courierv1alpha1.ReasonInsecureKubeconfig, message: "uses basic auth; use a token or a client certificate instead"}),
	Entry("no credentials at all", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) { u.Token = "" }),
		reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "has no credentials; embed a token or client-certificate-data and client-key-data"}),
	Entry("a token the worker does not know", kubeconfigCase{mutate: onUser(func(u *clientcmdapi.AuthInfo) { u.Token = "not-a-token" }),
		reason: courierv1alpha1.ReasonForbidden, message: "The worker rejected the kubeconfig's credentials", fromWorker: true}),
	Entry("another cluster's CA", kubeconfigCase{mutate: func(c *clientcmdapi.Config) {
		other := otherCA()
		onCluster(func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData = other })(c)
	}, reason: courierv1alpha1.ReasonInvalidKubeconfig, message: "does not verify against the kubeconfig's CA", fromWorker: true}),
	Entry("a server nobody listens on", kubeconfigCase{mutate: onCluster(func(c *clientcmdapi.Cluster) { c.Server = "https://" + freeAddress() }),
		reason: courierv1alpha1.ReasonUnreachable, message: "could not be reached", timeout: time.Minute, fromWorker: true}),
	Entry("the kubeconfig under another key than the WorkerCluster names", kubeconfigCase{mutate: func(*clientcmdapi.Config) {}, key: "config",
		reason: courierv1alpha1.ReasonSecretNotFound, message: `has no key "kubeconfig". Put the worker's kubeconfig under that key, or set spec.kubeconfig.secretRef.key`}),
)

// otherCA is the second worker's CA, which did not sign the first's
// serving certificate.
func otherCA() []byte {
	GinkgoHelper()
	data, err := env.Workers[1].Kubeconfig(framework.CourierUser)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		return c.CertificateAuthorityData
	}
	Fail("the second worker's kubeconfig has no cluster")
	return nil
}

// freeAddress is a loopback address nobody listens on.
func freeAddress() string {
	GinkgoHelper()
	ports, err := framework.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}
