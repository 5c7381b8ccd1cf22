package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	courier "github.com/courierdev/courier/api/v1alpha1"
	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

func mkCheck(name, config string) kueue.AdmissionCheck {
	return kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName,
		Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: "kueue.x-k8s.io", Kind: "MultiKueueConfig", Name: config}}}
}

func mkConfig(name string, clusters ...string) kueue.MultiKueueConfig {
	return kueue.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.MultiKueueConfigSpec{Clusters: clusters}}
}

func mkSecretCluster(name, secret string) kueue.MultiKueueCluster {
	return kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{Location: secret, LocationType: kueue.SecretLocationType}}}}
}

func wantSecretWorker(name, secret string) courier.WorkerCluster {
	return courier.WorkerCluster{TypeMeta: metav1.TypeMeta{APIVersion: "courier.dev/v1alpha1", Kind: "WorkerCluster"}, ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: courier.WorkerClusterSpec{Kubeconfig: &courier.KubeconfigSource{SecretRef: courier.SecretKeyReference{Name: secret, Key: "kubeconfig"}}}}
}

func wantPolicy(name string, strategy courier.DispatchStrategy, clusters ...string) courier.DispatchPolicy {
	return courier.DispatchPolicy{TypeMeta: metav1.TypeMeta{APIVersion: "courier.dev/v1alpha1", Kind: "DispatchPolicy"}, ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: courier.DispatchPolicySpec{Clusters: clusters, Strategy: strategy}}
}

func wantCheck(name, policy string) kueue.AdmissionCheck {
	return kueue.AdmissionCheck{TypeMeta: metav1.TypeMeta{APIVersion: "kueue.x-k8s.io/v1beta2", Kind: "AdmissionCheck"}, ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.AdmissionCheckSpec{ControllerName: courier.ControllerName, Parameters: &kueue.AdmissionCheckParametersReference{APIGroup: "courier.dev", Kind: "DispatchPolicy", Name: policy}}}
}

func TestConvert(t *testing.T) {
	opts := migrateOptions{kueueNamespace: "kueue-system", courierNamespace: "courier-system", strategy: courier.AllAtOnce, checkSuffix: "-courier"}
	labelled := mkSecretCluster("w1", "w1-secret")
	labelled.Labels = map[string]string{"zone": "eu"}
	automated := mkConfig("automated", "w1")
	automated.Spec.QuotaManagement = ptr.To(kueue.QuotaManagementAutomated)
	profiled := kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: "w3"},
		Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{ClusterProfileRef: &kueue.ClusterProfileReference{Name: "gke-w3"}}}}
	onDisk := kueue.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: "w4"},
		Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{Location: "/etc/w4.kubeconfig", LocationType: kueue.PathLocationType}}}}
	noParameters := mkCheck("bare", "")
	noParameters.Spec.Parameters = nil
	provisioning := kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "prov"}, Spec: kueue.AdmissionCheckSpec{ControllerName: "kueue.x-k8s.io/provisioning-request"}}
	cases := map[string]struct {
		state *multiKueueState
		opts  migrateOptions
		// want has no Notes: wantNotes are their beginnings, in order.
		want      *MigrateReport
		wantNotes []string
	}{
		"a MultiKueueCluster with a kubeconfig Secret: its WorkerCluster, the Secret to copy, the policy and the check": {
			state: &multiKueueState{
				checks:   []kueue.AdmissionCheck{mkCheck("mk", "gpus")},
				configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w1", "w2")},
				clusters: []kueue.MultiKueueCluster{labelled, mkSecretCluster("w2", "w1-secret")},
			},
			opts: opts,
			want: &MigrateReport{
				WorkerClusters: func() []courier.WorkerCluster {
					w1 := wantSecretWorker("w1", "w1-secret")
					w1.Labels = map[string]string{"zone": "eu"}
					return []courier.WorkerCluster{w1, wantSecretWorker("w2", "w1-secret")}
				}(),
				DispatchPolicies: []courier.DispatchPolicy{wantPolicy("gpus", courier.AllAtOnce, "w1", "w2")},
				AdmissionChecks:  []kueue.AdmissionCheck{wantCheck("mk-courier", "gpus")},
				Secrets:          []SecretCopy{{Name: "w1-secret", FromNamespace: "kueue-system", ToNamespace: "courier-system", UsedBy: []string{"w1", "w2"}}},
			},
		},
		"Kueue and Courier in one namespace: no Secret to copy, and the strategy asked for": {
			state: &multiKueueState{
				checks:   []kueue.AdmissionCheck{mkCheck("mk", "gpus")},
				configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w2")},
				clusters: []kueue.MultiKueueCluster{mkSecretCluster("w2", "w2-secret")},
			},
			opts: migrateOptions{kueueNamespace: "shared", courierNamespace: "shared", strategy: courier.BestFit, checkSuffix: "-c"},
			want: &MigrateReport{
				WorkerClusters:   []courier.WorkerCluster{wantSecretWorker("w2", "w2-secret")},
				DispatchPolicies: []courier.DispatchPolicy{wantPolicy("gpus", courier.BestFit, "w2")},
				AdmissionChecks:  []kueue.AdmissionCheck{wantCheck("mk-c", "gpus")},
			},
		},
		"a MultiKueueCluster with a ClusterProfile: the profile in Kueue's namespace, and the plugins to allow": {
			state: &multiKueueState{
				checks:   []kueue.AdmissionCheck{mkCheck("mk", "gpus")},
				configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w3")},
				clusters: []kueue.MultiKueueCluster{profiled},
			},
			opts: opts,
			want: &MigrateReport{
				WorkerClusters: []courier.WorkerCluster{{TypeMeta: metav1.TypeMeta{APIVersion: "courier.dev/v1alpha1", Kind: "WorkerCluster"}, ObjectMeta: metav1.ObjectMeta{Name: "w3"},
					Spec: courier.WorkerClusterSpec{ClusterProfileRef: &courier.ClusterProfileReference{Namespace: "kueue-system", Name: "gke-w3"}}}},
				DispatchPolicies: []courier.DispatchPolicy{wantPolicy("gpus", courier.AllAtOnce, "w3")},
				AdmissionChecks:  []kueue.AdmissionCheck{wantCheck("mk-courier", "gpus")},
			},
			wantNotes: []string{"WorkerCluster w3 is reached through ClusterProfile kueue-system/gke-w3: list, under workerCredentials.plugins"},
		},
		"what cannot be converted: a kubeconfig file, a missing cluster, a missing config, no parameters, automated quota": {
			state: &multiKueueState{
				checks:   []kueue.AdmissionCheck{mkCheck("mk", "gpus"), mkCheck("auto", "automated"), mkCheck("dangling", "gone"), noParameters, provisioning},
				configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w4", "w5"), automated},
				clusters: []kueue.MultiKueueCluster{mkSecretCluster("w1", "w1-secret"), onDisk},
			},
			opts: opts,
			want: &MigrateReport{
				WorkerClusters:   []courier.WorkerCluster{wantSecretWorker("w1", "w1-secret")},
				DispatchPolicies: []courier.DispatchPolicy{wantPolicy("automated", courier.AllAtOnce, "w1"), wantPolicy("gpus", courier.AllAtOnce, "w4", "w5")},
				AdmissionChecks:  []kueue.AdmissionCheck{wantCheck("auto-courier", "automated"), wantCheck("mk-courier", "gpus")},
				Secrets:          []SecretCopy{{Name: "w1-secret", FromNamespace: "kueue-system", ToNamespace: "courier-system", UsedBy: []string{"w1"}}},
			},
			wantNotes: []string{
				"MultiKueueConfig automated automates the manager's quota",
				"AdmissionCheck bare names no MultiKueueConfig in its parameters",
				"AdmissionCheck dangling names MultiKueueConfig gone, which does not exist",
				"MultiKueueCluster w4 reads its kubeconfig from the file /etc/w4.kubeconfig on Kueue's disk; Courier reads kubeconfigs from Secrets only: put it in a Secret in courier-system",
				"MultiKueueConfig gpus names MultiKueueCluster w5, which does not exist",
			},
		},
		"two checks on one config: one policy": {
			state: &multiKueueState{
				checks:   []kueue.AdmissionCheck{mkCheck("a", "gpus"), mkCheck("b", "gpus")},
				configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w2")},
				clusters: []kueue.MultiKueueCluster{mkSecretCluster("w2", "w2-secret")},
			},
			opts: opts,
			want: &MigrateReport{
				WorkerClusters:   []courier.WorkerCluster{wantSecretWorker("w2", "w2-secret")},
				DispatchPolicies: []courier.DispatchPolicy{wantPolicy("gpus", courier.AllAtOnce, "w2")},
				AdmissionChecks:  []kueue.AdmissionCheck{wantCheck("a-courier", "gpus"), wantCheck("b-courier", "gpus")},
				Secrets:          []SecretCopy{{Name: "w2-secret", FromNamespace: "kueue-system", ToNamespace: "courier-system", UsedBy: []string{"w2"}}},
			},
		},
		"no MultiKueue check: nothing": {
			state: &multiKueueState{checks: []kueue.AdmissionCheck{provisioning}},
			opts:  opts,
			want:  &MigrateReport{},
		},
		"the queues to move, their jobs in flight with MultiKueue, and the kinds other than TrainJob": {
			state: &multiKueueState{
				checks:   []kueue.AdmissionCheck{mkCheck("mk", "gpus"), provisioning},
				configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w2")},
				clusters: []kueue.MultiKueueCluster{mkSecretCluster("w2", "w2-secret")},
				queues: []kueue.ClusterQueue{
					*kueuetesting.MakeClusterQueue("gpu").Check("prov").Check("mk").Obj(),
					*kueuetesting.MakeClusterQueue("cpu").Check("prov").Obj(),
				},
				workloads: []kueue.Workload{
					*kueuetesting.MakeWorkload("job", "ns").ReserveQuota("gpu").Check("mk", kueue.CheckStateReady, "").Owner("batch/v1", "Job", "j", "uid-j").Obj(),
					*kueuetesting.MakeWorkload("trainjob", "ns").ReserveQuota("gpu").Check("mk", kueue.CheckStatePending, "").
						Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "uid-tj").Obj(),
					*kueuetesting.MakeWorkload("done", "ns").ReserveQuota("gpu").Check("mk", kueue.CheckStateReady, "").
						Condition(kueue.WorkloadFinished, metav1.ConditionTrue, "Succeeded", time.Time{}).Obj(),
					*kueuetesting.MakeWorkload("queued", "ns").Queue("lq").Obj(),
					*kueuetesting.MakeWorkload("cpu-job", "ns").ReserveQuota("cpu").Check("prov", kueue.CheckStateReady, "").
						Owner("kubeflow.org/v1", "PyTorchJob", "p", "uid-p").Obj(),
				},
			},
			opts: opts,
			want: &MigrateReport{
				WorkerClusters:   []courier.WorkerCluster{wantSecretWorker("w2", "w2-secret")},
				DispatchPolicies: []courier.DispatchPolicy{wantPolicy("gpus", courier.AllAtOnce, "w2")},
				AdmissionChecks:  []kueue.AdmissionCheck{wantCheck("mk-courier", "gpus")},
				Secrets:          []SecretCopy{{Name: "w2-secret", FromNamespace: "kueue-system", ToNamespace: "courier-system", UsedBy: []string{"w2"}}},
				ClusterQueues: []QueueMove{{Name: "gpu", Replace: map[string]string{"mk": "mk-courier"}, InFlight: 2,
					Patch: `kubectl patch clusterqueue gpu --type json -p '[{"op":"replace","path":"/spec/admissionChecksStrategy/admissionChecks/1/name","value":"mk-courier"}]'`}},
			},
			wantNotes: []string{"Jobs of kind Job.v1.batch use these queues: list it under externalFrameworks"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := convert(tc.state, tc.opts)
			notes := got.Notes
			got.Notes = nil
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			var begins []string
			for i, n := range notes {
				if i < len(tc.wantNotes) && strings.HasPrefix(n, tc.wantNotes[i]) {
					n = tc.wantNotes[i]
				}
				begins = append(begins, n)
			}
			if diff := cmp.Diff(tc.wantNotes, begins, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("notes (-want beginnings +got):\n%s", diff)
			}
		})
	}
}

// The view for people is YAML that kubectl apply takes, its notes in
// comments; after --apply, what was done.
func TestMigrateReportHuman(t *testing.T) {
	converted := convert(&multiKueueState{
		checks:   []kueue.AdmissionCheck{mkCheck("mk", "gpus")},
		configs:  []kueue.MultiKueueConfig{mkConfig("gpus", "w1")},
		clusters: []kueue.MultiKueueCluster{mkSecretCluster("w1", "w1-secret")},
	}, migrateOptions{kueueNamespace: "kueue-system", courierNamespace: "courier-system", strategy: courier.BestFit, checkSuffix: "-c"})
	applied := deepCopy(converted)
	applied.Applied = []string{"secret/w1-secret copied from kueue-system to courier-system", "workercluster/w1 applied"}
	cases := map[string]struct {
		report     *MigrateReport
		wantHeader []string
		wantDocs   []string
	}{
		"dry run": {
			report: converted,
			wantHeader: []string{
				"# The Courier objects that do what MultiKueue does on this manager: kubectl apply -f this file, or run kubectl courier migrate --apply.",
				"#", "# Copy the kubeconfig Secrets into Courier's namespace first (--apply does):",
				`#   kubectl get secret w1-secret -n kueue-system -o go-template='{{index .data "kubeconfig" | base64decode}}' | kubectl create secret generic w1-secret -n courier-system --from-file=kubeconfig=/dev/stdin`,
			},
			wantDocs: []string{"WorkerCluster/w1", "DispatchPolicy/gpus", "AdmissionCheck/mk-c"},
		},
		"nothing to convert": {
			report: &MigrateReport{},
			wantHeader: []string{
				"# The Courier objects that do what MultiKueue does on this manager: kubectl apply -f this file, or run kubectl courier migrate --apply.",
				"# No AdmissionCheck of controller kueue.x-k8s.io/multikueue names a MultiKueueConfig: nothing to convert.",
			},
		},
		"applied": {
			report:     applied,
			wantHeader: applied.Applied,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := tc.report.human(&out, &output{}); err != nil {
				t.Fatal(err)
			}
			docs := strings.Split(out.String(), "---\n")
			if diff := cmp.Diff(tc.wantHeader, strings.Split(strings.TrimSuffix(docs[0], "\n"), "\n")); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			var kinds []string
			for _, doc := range docs[1:] {
				obj := map[string]any{}
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatalf("a document is not YAML: %v\n%s", err, doc)
				}
				if _, ok := obj["status"]; ok {
					t.Errorf("a document has a status:\n%s", doc)
				}
				kinds = append(kinds, obj["kind"].(string)+"/"+obj["metadata"].(map[string]any)["name"].(string))
			}
			if diff := cmp.Diff(tc.wantDocs, kinds, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("documents (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClash(t *testing.T) {
	byMigrate := []metav1.ManagedFieldsEntry{{Manager: fieldManager, Operation: metav1.ManagedFieldsOperationApply}}
	other := func(obj client.Object) client.Object {
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate}})
		return obj
	}
	worker := wantSecretWorker("w1", "w1-secret")
	profiled := wantSecretWorker("w1", "")
	profiled.Spec.Kubeconfig, profiled.Spec.ClusterProfileRef = nil, &courier.ClusterProfileReference{Namespace: "fleet", Name: "w1"}
	policy := wantPolicy("gpus", courier.AllAtOnce, "w1", "w2")
	fewer := wantPolicy("gpus", courier.BestFit, "w1")
	check := wantCheck("mk-courier", "gpus")
	provisioning := check.DeepCopy()
	provisioning.Spec.ControllerName = "kueue.x-k8s.io/provisioning-request"
	cases := map[string]struct {
		want, got client.Object
		wantClash string
	}{
		"a WorkerCluster saying the same": {want: &worker, got: other(worker.DeepCopy())},
		"a WorkerCluster reaching its worker otherwise": {want: &worker, got: other(profiled.DeepCopy()),
			wantClash: "WorkerCluster w1 exists and reaches its worker through ClusterProfile fleet/w1, not kubeconfig Secret w1-secret key kubeconfig as MultiKueueCluster w1 does: delete it if it is the same worker, or rename the MultiKueueCluster"},
		"a WorkerCluster migrate applied before": {want: &worker, got: func() client.Object { o := profiled.DeepCopy(); o.ManagedFields = byMigrate; return o }()},
		"a DispatchPolicy over other clusters": {want: &policy, got: other(&fewer),
			wantClash: "DispatchPolicy gpus exists with clusters [w1] and strategy BestFit, not [w1, w2] and AllAtOnce as MultiKueueConfig gpus: delete it, or rename the MultiKueueConfig"},
		"a DispatchPolicy saying the same": {want: &policy, got: other(policy.DeepCopy())},
		"an AdmissionCheck of another controller": {want: &check, got: other(provisioning),
			wantClash: "AdmissionCheck mk-courier exists with controller kueue.x-k8s.io/provisioning-request: pick another --check-suffix"},
		"an AdmissionCheck saying the same": {want: &check, got: other(check.DeepCopy())},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantClash, clash(tc.want, tc.got)); diff != "" {
				t.Errorf("clash (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanSecret(t *testing.T) {
	copy := SecretCopy{Name: "w1", FromNamespace: "kueue-system", ToNamespace: "courier-system", UsedBy: []string{"w1"}}
	secret := func(ns, kubeconfig string, annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1", Annotations: annotations}, Data: map[string][]byte{"kubeconfig": []byte(kubeconfig), "other": []byte("x")}}
	}
	copied := map[string]string{CopiedFromAnnotation: "kueue-system/w1"}
	cases := map[string]struct {
		from, to    *corev1.Secret
		want        secretWrite
		wantProblem string
	}{
		"none in Courier's namespace: a copy of the kubeconfig": {
			from: secret("kueue-system", "new", nil),
			want: secretWrite{copy: copy, create: true, to: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "courier-system", Name: "w1", Annotations: copied},
				Data: map[string][]byte{"kubeconfig": []byte("new")}}},
		},
		"the same kubeconfig: left": {
			from: secret("kueue-system", "same", nil), to: secret("courier-system", "same", nil),
			want: secretWrite{copy: copy},
		},
		"a copy of migrate's, since rotated in Kueue's namespace: updated": {
			from: secret("kueue-system", "rotated", nil), to: secret("courier-system", "old", copied),
			want: secretWrite{copy: copy, to: secret("courier-system", "rotated", copied)},
		},
		"another kubeconfig migrate did not copy: refused": {
			from: secret("kueue-system", "mk", nil), to: secret("courier-system", "courier's own", nil),
			wantProblem: "Secret courier-system/w1 exists and holds another kubeconfig than kueue-system/w1, and migrate did not copy it: delete it if Courier does not use it, or rename Kueue's Secret and its MultiKueueCluster",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, problem := planSecret(copy, tc.from, tc.to)
			if diff := cmp.Diff(tc.wantProblem, problem); diff != "" {
				t.Errorf("problem (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(secretWrite{})); diff != "" {
				t.Errorf("write (-want +got):\n%s", diff)
			}
		})
	}
}

// Flags are checked before the manager is reached.
func TestMigrateFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"an unknown strategy": {args: []string{"--strategy", "Fastest"}, wantErr: `--strategy "Fastest": use AllAtOnce, Incremental or BestFit`},
		"an empty suffix":     {args: []string{"--check-suffix", ""}, wantErr: "--check-suffix must not be empty: the Courier checks live beside the MultiKueue ones while ClusterQueues move over"},
		"an argument":         {args: []string{"mk"}, wantErr: `unknown command "mk" for "kubectl courier migrate"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
			cmd.SetArgs(append([]string{"--kubeconfig", "/nonexistent", "migrate"}, tc.args...))
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
