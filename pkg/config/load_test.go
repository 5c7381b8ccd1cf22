package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	courier "github.com/courierdev/courier/api/v1alpha1"
)

func defaulted() *configv1alpha1.Configuration {
	return &configv1alpha1.Configuration{
		TypeMeta:          metav1.TypeMeta{APIVersion: "config.courier.dev/v1alpha1", Kind: "Configuration"},
		Origin:            "courier",
		Namespace:         "courier-system",
		WorkerLostTimeout: &metav1.Duration{Duration: 15 * time.Minute},
		LostWorkerPolicy:  courier.LostWorkerFenced,
		Fence: &configv1alpha1.Fence{Namespace: "courier-system", Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			HeartbeatInterval: &metav1.Duration{Duration: 10 * time.Second}, StopGrace: &metav1.Duration{Duration: 2 * time.Minute}},
		SelfFault:           &configv1alpha1.SelfFault{Share: ptr.To[int32](50), Window: &metav1.Duration{Duration: 2 * time.Minute}},
		GCInterval:          &metav1.Duration{Duration: time.Minute},
		DispatchConcurrency: ptr.To[int32](16),
		StatusMirrorDelay:   &metav1.Duration{Duration: 5 * time.Second},
		KueueFinishGrace:    &metav1.Duration{Duration: 10 * time.Second},
		ManagerClient:       &configv1alpha1.ClientConnection{QPS: ptr.To[float32](100), Burst: ptr.To[int32](200)},
		WorkerClient:        &configv1alpha1.ClientConnection{QPS: ptr.To[float32](500), Burst: ptr.To[int32](1000)},
		Health:              &configv1alpha1.HealthEndpoint{BindAddress: ":8081"},
		Metrics:             &configv1alpha1.MetricsEndpoint{BindAddress: ":8443", SecureServing: ptr.To(true)},
		Webhook: &configv1alpha1.Webhook{
			Enable:                      ptr.To(false),
			Port:                        ptr.To[int32](9443),
			CertDir:                     "/tmp/k8s-webhook-server/serving-certs",
			CertManagement:              configv1alpha1.CertManagementInternal,
			ServiceName:                 "courier-webhook-service",
			SecretName:                  "courier-webhook-server-cert",
			MutatingConfigurationName:   "courier-mutating-webhook-configuration",
			ValidatingConfigurationName: "courier-validating-webhook-configuration",
		},
		WorkerCredentials: &configv1alpha1.WorkerCredentials{
			ExpiryWarning: &metav1.Duration{Duration: 7 * 24 * time.Hour},
			PluginTimeout: &metav1.Duration{Duration: 20 * time.Second},
		},
		PlacementDecisions: &configv1alpha1.PlacementDecisions{Enable: ptr.To(false)},
		LeaderElection: &componentconfig.LeaderElectionConfiguration{
			LeaderElect:       ptr.To(true),
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      "leases",
			ResourceName:      "courier.dev",
			ResourceNamespace: "courier-system",
		},
	}
}

func TestLoad(t *testing.T) {
	header := "apiVersion: config.courier.dev/v1alpha1\nkind: Configuration\n"
	cases := map[string]struct {
		file    string
		want    func(*configv1alpha1.Configuration)
		wantErr []string
	}{
		"empty file gives the defaults": {
			file: header,
			want: func(*configv1alpha1.Configuration) {},
		},
		"set fields are kept": {
			file: header + `origin: team-a
namespace: batch
workerLostTimeout: 2m
lostWorkerPolicy: Timeout
fence: {namespace: fences, timeout: 1m, heartbeatInterval: 5s, stopGrace: 30s}
selfFault: {share: 75, window: 1m}
gcInterval: 30s
dispatchConcurrency: 4
statusMirrorDelay: 0s
kueueFinishGrace: 45s
workerClient: {qps: 50, burst: 80}
leaderElection: {leaderElect: false}
`,
			want: func(c *configv1alpha1.Configuration) {
				c.Origin = "team-a"
				c.Namespace = "batch"
				c.WorkerLostTimeout.Duration = 2 * time.Minute
				c.LostWorkerPolicy = courier.LostWorkerTimeout
				c.Fence = &configv1alpha1.Fence{Namespace: "fences", Timeout: &metav1.Duration{Duration: time.Minute},
					HeartbeatInterval: &metav1.Duration{Duration: 5 * time.Second}, StopGrace: &metav1.Duration{Duration: 30 * time.Second}}
				c.SelfFault = &configv1alpha1.SelfFault{Share: ptr.To[int32](75), Window: &metav1.Duration{Duration: time.Minute}}
				c.GCInterval.Duration = 30 * time.Second
				c.DispatchConcurrency = ptr.To[int32](4)
				c.StatusMirrorDelay.Duration = 0
				c.KueueFinishGrace.Duration = 45 * time.Second
				c.WorkerClient = &configv1alpha1.ClientConnection{QPS: ptr.To[float32](50), Burst: ptr.To[int32](80)}
				c.LeaderElection.LeaderElect = ptr.To(false)
				c.LeaderElection.ResourceNamespace = "batch"
			},
		},
		"external frameworks get managedBy defaults": {
			file: header + `externalFrameworks:
- name: Job.v1.batch
- name: MyJob.v1.example.com
  managedBy: {path: spec.runPolicy.managedBy, value: example.com/courier}
  status: {fields: [conditions, phase]}
  forwardedSpecPaths: [spec.parallelism, spec.runPolicy.ttl]
`,
			want: func(c *configv1alpha1.Configuration) {
				c.ExternalFrameworks = []configv1alpha1.ExternalFramework{
					{
						Name:      "Job.v1.batch",
						ManagedBy: &configv1alpha1.ManagedBy{Path: "spec.managedBy", Value: "courier.dev/dispatcher"},
						Status:    &configv1alpha1.StatusSync{},
					},
					{
						Name:      "MyJob.v1.example.com",
						ManagedBy: &configv1alpha1.ManagedBy{Path: "spec.runPolicy.managedBy", Value: "example.com/courier"},
						Status:    &configv1alpha1.StatusSync{Fields: []string{"conditions", "phase"}},
						// Paths to forward are the user's, as written.
						ForwardedSpecPaths: []string{"spec.parallelism", "spec.runPolicy.ttl"},
					},
				}
			},
		},
		"webhook settings are kept": {
			file: header + `webhook: {enable: true, port: 10250, certManagement: External, certDir: /certs}
`,
			want: func(c *configv1alpha1.Configuration) {
				c.Webhook.Enable = ptr.To(true)
				c.Webhook.Port = ptr.To[int32](10250)
				c.Webhook.CertManagement = configv1alpha1.CertManagementExternal
				c.Webhook.CertDir = "/certs"
			},
		},
		"metrics over plain HTTP when asked for": {
			file: header + "metrics: {bindAddress: \"127.0.0.1:8080\", secureServing: false}\n",
			want: func(c *configv1alpha1.Configuration) {
				c.Metrics = &configv1alpha1.MetricsEndpoint{BindAddress: "127.0.0.1:8080", SecureServing: ptr.To(false)}
			},
		},
		"metrics certificate from a folder": {
			file: header + "metrics: {certDir: /certs}\n",
			want: func(c *configv1alpha1.Configuration) {
				c.Metrics.CertDir = "/certs"
			},
		},
		"a metrics certificate with plain HTTP": {
			file:    header + "metrics: {secureServing: false, certDir: /certs}\n",
			wantErr: []string{"metrics.certDir: Forbidden: a certificate is for HTTPS"},
		},
		"bad bind addresses": {
			file: header + "metrics: {bindAddress: \"8443\"}\nhealth: {bindAddress: \":http-alt\"}\n",
			wantErr: []string{`metrics.bindAddress: Invalid value: "8443": must be host:port`,
				`health.bindAddress: Invalid value: ":http-alt": the port must be a number`},
		},
		"bad webhook settings": {
			file: header + `webhook: {enable: true, port: 70000, serviceName: Bad_Service, mutatingConfigurationName: "a b"}
`,
			wantErr: []string{"webhook.port: Invalid value: 70000", `webhook.serviceName: Invalid value: "Bad_Service"`, `webhook.mutatingConfigurationName: Invalid value: "a b"`},
		},
		"unknown certificate management": {
			file:    header + "webhook: {enable: true, certManagement: Vault}\n",
			wantErr: []string{`webhook.certManagement: Unsupported value: "Vault"`},
		},
		"credential plugins get their defaults": {
			file: header + `workerCredentials:
  expiryWarning: 24h
  pluginTimeout: 5s
  plugins:
  - name: google
    command: /usr/lib/google-cloud-sdk/bin/gke-gcloud-auth-plugin
  - name: open-cluster-management
    command: /opt/ocm/cp-creds
    args: [--managed-serviceaccount=courier]
    env: [{name: HOME, value: /var/run/ocm}]
    apiVersion: client.authentication.k8s.io/v1beta1
    provideClusterInfo: false
    profileArgs: Append
    profileEnv: Replace
placementDecisions: {enable: true}
`,
			want: func(c *configv1alpha1.Configuration) {
				c.WorkerCredentials = &configv1alpha1.WorkerCredentials{
					ExpiryWarning: &metav1.Duration{Duration: 24 * time.Hour},
					PluginTimeout: &metav1.Duration{Duration: 5 * time.Second},
					Plugins: []configv1alpha1.CredentialPlugin{
						{Name: "google", Command: "/usr/lib/google-cloud-sdk/bin/gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1",
							ProvideClusterInfo: ptr.To(true), ProfileArgs: "Ignore", ProfileEnv: "Ignore"},
						{Name: "open-cluster-management", Command: "/opt/ocm/cp-creds", Args: []string{"--managed-serviceaccount=courier"},
							Env: []configv1alpha1.PluginEnvVar{{Name: "HOME", Value: "/var/run/ocm"}}, APIVersion: "client.authentication.k8s.io/v1beta1",
							ProvideClusterInfo: ptr.To(false), ProfileArgs: "Append", ProfileEnv: "Replace"},
					},
				}
				c.PlacementDecisions.Enable = ptr.To(true)
			},
		},
		"bad credential plugins name their fields": {
			file: header + `workerCredentials:
  expiryWarning: -1h
  pluginTimeout: 10m
  plugins:
  - {name: gke, command: gke-gcloud-auth-plugin}
  - {name: gke, command: /opt/../bin/p}
  - {name: "bad name", command: /bin/p, apiVersion: client.authentication.k8s.io/v2, env: [{name: KUBERNETES_EXEC_INFO}, {name: "1x"}]}
`,
			wantErr: []string{
				`workerCredentials.expiryWarning: Invalid value: "-1h0m0s": must not be negative`,
				`workerCredentials.pluginTimeout: Invalid value: "10m0s": must be between 1s and 5m`,
				`workerCredentials.plugins[0].command: Invalid value: "gke-gcloud-auth-plugin": must be the plugin binary's absolute, clean path`,
				`workerCredentials.plugins[1].name: Duplicate value: "gke"`,
				`workerCredentials.plugins[1].command: Invalid value: "/opt/../bin/p"`,
				`workerCredentials.plugins[2].name: Invalid value: "bad name"`,
				`workerCredentials.plugins[2].apiVersion: Unsupported value: "client.authentication.k8s.io/v2"`,
				`workerCredentials.plugins[2].env[0].name: Forbidden: Courier sets KUBERNETES_EXEC_INFO itself`,
				`workerCredentials.plugins[2].env[1].name: Invalid value: "1x"`,
			},
		},
		"unknown field": {
			file:    header + "orign: typo\n",
			wantErr: []string{`unknown field "orign"`},
		},
		"wrong kind": {
			file:    "apiVersion: config.courier.dev/v1alpha1\nkind: Settings\n",
			wantErr: []string{"Settings"},
		},
		"a Fenced workerLostTimeout too short for the fence names the margin it needs": {
			file:    header + "workerLostTimeout: 3m\n",
			wantErr: []string{`workerLostTimeout: Invalid value: "3m0s": must be at least 5m12s under lostWorkerPolicy Fenced`},
		},
		"a shorter fence timeout lets a shorter workerLostTimeout through": {
			file: header + "workerLostTimeout: 3m\nfence: {timeout: 30s, stopGrace: 30s}\n",
			want: func(c *configv1alpha1.Configuration) {
				c.WorkerLostTimeout.Duration = 3 * time.Minute
				c.Fence.Timeout.Duration, c.Fence.StopGrace.Duration = 30*time.Second, 30*time.Second
			},
		},
		"lost-worker settings out of bounds name their fields": {
			file: header + "lostWorkerPolicy: Sometimes\nfence: {namespace: Bad_NS, timeout: 20s, heartbeatInterval: 10s}\nselfFault: {share: 0, window: 0s}\n",
			wantErr: []string{`lostWorkerPolicy: Unsupported value: "Sometimes"`, `fence.namespace: Invalid value: "Bad_NS"`,
				`fence.heartbeatInterval: Invalid value: "10s": must be at most a third of fence.timeout`, "selfFault.share: Invalid value: 0", `selfFault.window: Invalid value: "0s"`},
		},
		"invalid values name their fields": {
			file: header + `origin: "not a label value!"
namespace: Bad_NS
workerLostTimeout: -1s
gcInterval: 0s
dispatchConcurrency: 0
statusMirrorDelay: 2m
kueueFinishGrace: -1s
workerClient: {qps: 0, burst: -1}
managerClient: {qps: 10, burst: 5}
`,
			wantErr: []string{"origin: Invalid value", "namespace: Invalid value", "workerLostTimeout: Invalid value",
				"gcInterval: Invalid value", "dispatchConcurrency: Invalid value: 0: must be between 1 and 256",
				`statusMirrorDelay: Invalid value: "2m0s": must be between 0s and 1m`,
				`kueueFinishGrace: Invalid value: "-1s": must be between 0s and 10m`, "workerClient.qps: Invalid value", "workerClient.burst: Invalid value",
				"managerClient.burst: Invalid value: 5: must be at least qps"},
		},
		"bad leader election timing": {
			file:    header + "leaderElection: {leaseDuration: 5s, renewDeadline: 10s}\n",
			wantErr: []string{"leaderElection.leaseDuration: Invalid value"},
		},
		"malformed framework name": {
			file:    header + "externalFrameworks: [{name: Job}]\n",
			wantErr: []string{`externalFrameworks[0].name: Invalid value: "Job": must have the form Kind.version.group`},
		},
		"lower-case kind": {
			file:    header + "externalFrameworks: [{name: job.v1.batch}]\n",
			wantErr: []string{`externalFrameworks[0].name: Invalid value: "job.v1.batch": kind "job" must be a capitalised identifier`},
		},
		"bad group": {
			file:    header + "externalFrameworks: [{name: Job.v1.Batch_Group}]\n",
			wantErr: []string{`externalFrameworks[0].name: Invalid value: "Job.v1.Batch_Group": group "Batch_Group"`},
		},
		"duplicate framework": {
			file:    header + "externalFrameworks: [{name: Job.v1.batch}, {name: Job.v2.batch}]\n",
			wantErr: []string{`externalFrameworks[1].name: Duplicate value: "Job.v2.batch"`},
		},
		"TrainJob is built in": {
			file:    header + "externalFrameworks: [{name: TrainJob.v1alpha1.trainer.kubeflow.org}]\n",
			wantErr: []string{"externalFrameworks[0].name: Forbidden: TrainJob is built in"},
		},
		"managedBy path outside spec": {
			file:    header + "externalFrameworks: [{name: Job.v1.batch, managedBy: {path: metadata.managedBy}}]\n",
			wantErr: []string{`externalFrameworks[0].managedBy.path: Invalid value: "metadata.managedBy": must be a dot-separated field path under spec`},
		},
		"managedBy path with an empty segment": {
			file:    header + "externalFrameworks: [{name: Job.v1.batch, managedBy: {path: spec..managedBy}}]\n",
			wantErr: []string{`externalFrameworks[0].managedBy.path: Invalid value: "spec..managedBy": segment "" is not a field name`},
		},
		"bad forwarded spec paths": {
			file: header + "externalFrameworks: [{name: Job.v1.batch, forwardedSpecPaths: [spec.parallelism, spec.parallelism, status.x, spec.suspend, spec.managedBy]}]\n",
			wantErr: []string{
				`externalFrameworks[0].forwardedSpecPaths[1]: Duplicate value: "spec.parallelism"`,
				`externalFrameworks[0].forwardedSpecPaths[2]: Invalid value: "status.x": must be a dot-separated field path under spec`,
				`externalFrameworks[0].forwardedSpecPaths[3]: Forbidden: spec.suspend is set by Kueue and Courier on each side`,
				`externalFrameworks[0].forwardedSpecPaths[4]: Forbidden: spec.managedBy is set by Kueue and Courier on each side`,
			},
		},
		"bad status fields": {
			file:    header + "externalFrameworks: [{name: Job.v1.batch, status: {fields: [conditions, conditions, 'a.b']}}]\n",
			wantErr: []string{`externalFrameworks[0].status.fields[1]: Duplicate value: "conditions"`, `externalFrameworks[0].status.fields[2]: Invalid value: "a.b"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Load() succeeded, want an error containing %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Load() error = %q, want it to contain %q", err, want)
					}
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("Load() error = %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load() failed: %v", err)
			}
			want := defaulted()
			tc.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Load() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadNamespaceFromThePod(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	header := "apiVersion: config.courier.dev/v1alpha1\nkind: Configuration\n"
	cases := map[string]struct {
		file, env, want string
	}{
		"left out: the pod's":           {file: header, env: "batch-system", want: "batch-system"},
		"left out, no pod: the default": {file: header, want: "courier-system"},
		"set: the file's":               {file: header + "namespace: team-a\n", env: "batch-system", want: "team-a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv(configv1alpha1.NamespaceEnv, tc.env)
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Namespace != tc.want || cfg.LeaderElection.ResourceNamespace != tc.want {
				t.Errorf("namespace %q, lease namespace %q; want %q", cfg.Namespace, cfg.LeaderElection.ResourceNamespace, tc.want)
			}
		})
	}
}

func TestLoadWithoutFileGivesDefaults(t *testing.T) {
	got, err := Load("")
	if err != nil {
		t.Fatalf("Load(\"\") failed: %v", err)
	}
	want := defaulted()
	want.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load(\"\") mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "reading configuration") {
		t.Fatalf("Load() error = %v, want a reading error", err)
	}
}
