package cli

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// CopiedFromAnnotation on a Secret kubectl courier migrate copied names
// the Secret it was copied from, as namespace/name.
const CopiedFromAnnotation = "courier.dev/copied-from"

// fieldManager owns what kubectl courier migrate applies.
const fieldManager = "kubectl-courier"

// applyMigration checks everything first and writes nothing if an object
// of the same name stands in the way, so that a refused run leaves the
// manager as it was; then it copies the kubeconfig Secrets and applies
// the objects, Secrets first so that the WorkerClusters find them.
func applyMigration(ctx context.Context, c client.Client, r *MigrateReport) error {
	secrets, problems, err := checkSecrets(ctx, c, r.Secrets)
	if err != nil {
		return err
	}
	objs := r.typedObjects()
	for _, want := range objs {
		got := want.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			if kerrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %s %s: %w", kindOf(want), want.GetName(), err)
		}
		if p := clash(want, got); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("applying nothing, as %d objects on the manager stand in the way:\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	for _, s := range secrets {
		line, err := s.write(ctx, c)
		if err != nil {
			return err
		}
		r.Applied = append(r.Applied, line)
	}
	for _, obj := range objs {
		u, err := applyable(obj)
		if err != nil {
			return err
		}
		ac := client.ApplyConfigurationFromUnstructured(u)
		if err := c.Apply(ctx, ac, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
		r.Applied = append(r.Applied, fmt.Sprintf("%s/%s applied", strings.ToLower(kindOf(obj)), obj.GetName()))
	}
	return nil
}

func kindOf(obj client.Object) string { return obj.GetObjectKind().GroupVersionKind().Kind }

// clash says why an object of the name migrate applies stands in the way,
// or "" if applying over it is safe: migrate wrote it, or it already says
// what migrate would.
func clash(want, got client.Object) string {
	if managedBy(got, fieldManager) {
		return ""
	}
	switch w := want.(type) {
	case *courier.WorkerCluster:
		g := got.(*courier.WorkerCluster)
		if equality.Semantic.DeepEqual(w.Spec.Kubeconfig, g.Spec.Kubeconfig) && equality.Semantic.DeepEqual(w.Spec.ClusterProfileRef, g.Spec.ClusterProfileRef) {
			return ""
		}
		return fmt.Sprintf("WorkerCluster %s exists and reaches its worker through %s, not %s as MultiKueueCluster %s does: delete it if it is the same worker, or rename the MultiKueueCluster",
			w.Name, workerSource(g), workerSource(w), w.Name)
	case *courier.DispatchPolicy:
		g := got.(*courier.DispatchPolicy)
		if slices.Equal(w.Spec.Clusters, g.Spec.Clusters) && w.Spec.Strategy == g.Spec.Strategy {
			return ""
		}
		return fmt.Sprintf("DispatchPolicy %s exists with clusters [%s] and strategy %s, not [%s] and %s as MultiKueueConfig %s: delete it, or rename the MultiKueueConfig",
			w.Name, strings.Join(g.Spec.Clusters, ", "), g.Spec.Strategy, strings.Join(w.Spec.Clusters, ", "), w.Spec.Strategy, w.Name)
	case *kueue.AdmissionCheck:
		g := got.(*kueue.AdmissionCheck)
		if w.Spec.ControllerName == g.Spec.ControllerName && equality.Semantic.DeepEqual(w.Spec.Parameters, g.Spec.Parameters) {
			return ""
		}
		return fmt.Sprintf("AdmissionCheck %s exists with controller %s: pick another --check-suffix", w.Name, g.Spec.ControllerName)
	}
	return ""
}

func workerSource(wc *courier.WorkerCluster) string {
	switch {
	case wc.Spec.Kubeconfig != nil:
		return fmt.Sprintf("kubeconfig Secret %s key %s", wc.Spec.Kubeconfig.SecretRef.Name, wc.Spec.Kubeconfig.SecretRef.Key)
	case wc.Spec.ClusterProfileRef != nil:
		return fmt.Sprintf("ClusterProfile %s/%s", wc.Spec.ClusterProfileRef.Namespace, wc.Spec.ClusterProfileRef.Name)
	}
	return "nothing"
}

func managedBy(obj client.Object, manager string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == manager })
}

// secretWrite is what migrate does to one kubeconfig Secret in Courier's
// namespace: create it, update a copy of its own, or leave it.
type secretWrite struct {
	copy SecretCopy
	// to is the Secret to write, nil to leave Courier's as it is.
	to     *corev1.Secret
	create bool
}

// checkSecrets reads each kubeconfig Secret to copy and the one of its
// name in Courier's namespace, and decides what to do with each.
func checkSecrets(ctx context.Context, c client.Client, copies []SecretCopy) ([]secretWrite, []string, error) {
	var writes []secretWrite
	var problems []string
	for _, s := range copies {
		from := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: s.FromNamespace, Name: s.Name}, from); err != nil {
			if kerrors.IsNotFound(err) {
				problems = append(problems, fmt.Sprintf("kubeconfig Secret %s/%s, which MultiKueueCluster %s names, does not exist: create it or fix the MultiKueueCluster (or --kueue-namespace)",
					s.FromNamespace, s.Name, strings.Join(s.UsedBy, ", ")))
				continue
			}
			return nil, nil, fmt.Errorf("reading kubeconfig Secret %s/%s: %w", s.FromNamespace, s.Name, err)
		}
		to := &corev1.Secret{}
		err := c.Get(ctx, types.NamespacedName{Namespace: s.ToNamespace, Name: s.Name}, to)
		switch {
		case kerrors.IsNotFound(err):
			to = nil
		case err != nil:
			return nil, nil, fmt.Errorf("reading Secret %s/%s: %w", s.ToNamespace, s.Name, err)
		}
		w, problem := planSecret(s, from, to)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		writes = append(writes, w)
	}
	return writes, problems, nil
}

// planSecret decides what to do with Courier's Secret to (nil if there is
// none) for the copy of from: a Secret migrate did not copy is never
// overwritten.
func planSecret(s SecretCopy, from, to *corev1.Secret) (secretWrite, string) {
	source := s.FromNamespace + "/" + s.Name
	switch {
	case to == nil:
		return secretWrite{copy: s, create: true, to: &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ToNamespace, Name: s.Name, Annotations: map[string]string{CopiedFromAnnotation: source}},
			Data:       map[string][]byte{kueue.MultiKueueConfigSecretKey: from.Data[kueue.MultiKueueConfigSecretKey]},
		}}, ""
	case bytes.Equal(to.Data[kueue.MultiKueueConfigSecretKey], from.Data[kueue.MultiKueueConfigSecretKey]):
		return secretWrite{copy: s}, ""
	case to.Annotations[CopiedFromAnnotation] == source:
		// Kueue's copy was rotated since migrate last copied it.
		updated := to.DeepCopy()
		updated.Data[kueue.MultiKueueConfigSecretKey] = from.Data[kueue.MultiKueueConfigSecretKey]
		return secretWrite{copy: s, to: updated}, ""
	}
	return secretWrite{}, fmt.Sprintf("Secret %s/%s exists and holds another kubeconfig than %s, and migrate did not copy it: delete it if Courier does not use it, or rename Kueue's Secret and its MultiKueueCluster",
		s.ToNamespace, s.Name, source)
}

func (w secretWrite) write(ctx context.Context, c client.Client) (string, error) {
	s := w.copy
	switch {
	case w.to == nil:
		return fmt.Sprintf("secret/%s already in %s", s.Name, s.ToNamespace), nil
	case w.create:
		if err := c.Create(ctx, w.to); err != nil {
			return "", fmt.Errorf("copying kubeconfig Secret %s/%s to %s: %w", s.FromNamespace, s.Name, s.ToNamespace, err)
		}
		return fmt.Sprintf("secret/%s copied from %s to %s", s.Name, s.FromNamespace, s.ToNamespace), nil
	}
	if err := c.Update(ctx, w.to); err != nil {
		return "", fmt.Errorf("updating kubeconfig Secret %s/%s from %s: %w", s.ToNamespace, s.Name, s.FromNamespace, err)
	}
	return fmt.Sprintf("secret/%s updated in %s from %s", s.Name, s.ToNamespace, s.FromNamespace), nil
}
