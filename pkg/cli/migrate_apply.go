package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

func (o *options) migrateCommand() *cobra.Command {
	m := migrateOptions{strategy: courier.AllAtOnce}
	var strategy string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Print (or apply, with --apply) the WorkerClusters, DispatchPolicies and AdmissionChecks that do with Courier what MultiKueue does on this manager",
		Long: `migrate reads the MultiKueueConfigs, MultiKueueClusters and the AdmissionChecks of controller kueue.x-k8s.io/multikueue
on the manager, and prints the Courier objects that do the same: a WorkerCluster per MultiKueueCluster, with its
kubeconfig Secret or its ClusterProfile; a DispatchPolicy per MultiKueueConfig; a Courier AdmissionCheck per
MultiKueue one, named with --check-suffix. It lists the ClusterQueues to move over, with the jobs MultiKueue still
runs for them, and what it could not convert. With --apply, it applies them, and copies the kubeconfig Secrets from
Kueue's namespace into Courier's. It changes no ClusterQueue: docs/migrating-from-multikueue.md says when to.`,
		Example: `  kubectl courier migrate > courier-objects.yaml
  kubectl courier migrate --kueue-namespace kueue-system --courier-namespace courier-system --apply
  kubectl courier migrate -o json | jq '.clusterQueues'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m.strategy = courier.DispatchStrategy(strategy)
			if !slices.Contains([]courier.DispatchStrategy{courier.AllAtOnce, courier.Incremental, courier.BestFit}, m.strategy) {
				return fmt.Errorf("--strategy %q: use AllAtOnce, Incremental or BestFit", strategy)
			}
			if m.checkSuffix == "" {
				return errors.New("--check-suffix must not be empty: the Courier checks live beside the MultiKueue ones while ClusterQueues move over")
			}
			o.out.allNamespaces = false
			return o.run(cmd.Context(), func(ctx context.Context, c *clients) (report, error) {
				s, err := gatherMultiKueue(ctx, c)
				if err != nil {
					return nil, err
				}
				r := convert(s, m)
				if m.apply {
					if err := applyMigration(ctx, c.manager, r); err != nil {
						return nil, err
					}
				}
				return r, nil
			})
		},
	}
	cmd.Flags().StringVar(&m.kueueNamespace, "kueue-namespace", "kueue-system", "Kueue's namespace, where MultiKueue's kubeconfig Secrets and ClusterProfiles are.")
	cmd.Flags().StringVar(&m.courierNamespace, "courier-namespace", "courier-system", "Courier's namespace, where it reads kubeconfig Secrets.")
	cmd.Flags().StringVar(&strategy, "strategy", string(courier.AllAtOnce), "The DispatchPolicies' strategy: AllAtOnce does what MultiKueue does by default; BestFit sends each job to the best worker only.")
	cmd.Flags().StringVar(&m.checkSuffix, "check-suffix", "-courier", "Added to each MultiKueue AdmissionCheck's name to name its Courier check; both exist while ClusterQueues move over.")
	cmd.Flags().BoolVar(&m.apply, "apply", false, "Apply the objects (server-side, field manager kubectl-courier) and copy the kubeconfig Secrets into Courier's namespace.")
	return cmd
}

// human prints the objects as YAML that kubectl apply takes, after
// comments that say what else to do; after --apply, what was done.
func (r *MigrateReport) human(w io.Writer, _ *output) error {
	var b strings.Builder
	if len(r.Applied) > 0 {
		for _, line := range r.Applied {
			fmt.Fprintln(&b, line)
		}
	} else {
		fmt.Fprintln(&b, "# The Courier objects that do what MultiKueue does on this manager: kubectl apply -f this file, or run kubectl courier migrate --apply.")
		if len(r.AdmissionChecks) == 0 {
			fmt.Fprintln(&b, "# No AdmissionCheck of controller kueue.x-k8s.io/multikueue names a MultiKueueConfig: nothing to convert.")
		}
		if len(r.Secrets) > 0 {
			fmt.Fprintln(&b, "#\n# Copy the kubeconfig Secrets into Courier's namespace first (--apply does):")
			for _, s := range r.Secrets {
				fmt.Fprintf(&b, "#   kubectl get secret %s -n %s -o go-template='{{index .data \"kubeconfig\" | base64decode}}' | kubectl create secret generic %s -n %s --from-file=kubeconfig=/dev/stdin\n",
					s.Name, s.FromNamespace, s.Name, s.ToNamespace)
			}
		}
	}
	if len(r.ClusterQueues) > 0 {
		fmt.Fprintln(&b, "#\n# ClusterQueues to move over once MultiKueue runs none of their jobs (docs/migrating-from-multikueue.md):")
		for _, q := range r.ClusterQueues {
			var swaps []string
			for _, from := range slices.Sorted(maps.Keys(q.Replace)) {
				swaps = append(swaps, from+" -> "+q.Replace[from])
			}
			fmt.Fprintf(&b, "#   %s (%s): %d workloads in flight with MultiKueue\n#     %s\n", q.Name, strings.Join(swaps, ", "), q.InFlight, q.Patch)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(&b, "#\n# Not converted, or to do by hand:")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "#   - %s\n", n)
		}
	}
	if len(r.Applied) == 0 {
		for _, obj := range r.typedObjects() {
			u, err := applyable(obj)
			if err != nil {
				return err
			}
			data, err := yaml.Marshal(u.Object)
			if err != nil {
				return fmt.Errorf("printing %s: %w", obj.GetName(), err)
			}
			fmt.Fprintf(&b, "---\n%s", data)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// applyable is obj as kubectl apply reads it: no status, no creation
// time.
func applyable(obj client.Object) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	unstructured.RemoveNestedField(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return &unstructured.Unstructured{Object: u}, nil
}

// typedObjects are the report's objects in the order they are applied.
func (r *MigrateReport) typedObjects() []client.Object {
	var out []client.Object
	for i := range r.WorkerClusters {
		out = append(out, &r.WorkerClusters[i])
	}
	for i := range r.DispatchPolicies {
		out = append(out, &r.DispatchPolicies[i])
	}
	for i := range r.AdmissionChecks {
		out = append(out, &r.AdmissionChecks[i])
	}
	return out
}

func (r *MigrateReport) named() []runtime.Object {
	var out []runtime.Object
	for _, obj := range r.typedObjects() {
		out = append(out, object(obj.GetObjectKind().GroupVersionKind(), "", obj.GetName()))
	}
	return out
}

// DeepCopyObject makes the report a runtime.Object for the printers.
func (r *MigrateReport) DeepCopyObject() runtime.Object { return deepCopy(r) }
