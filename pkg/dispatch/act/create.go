package act

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/cluster"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/dispatch/plan"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/metrics"
)

// creation is what creating a Workload copy did on one worker.
type creation struct {
	ev  *plan.Event
	err error
}

// createOn creates wl's copies on the clusters, on all at once.
func (a *Actor) createOn(ctx context.Context, clusters []string, wl *kueue.Workload) []creation {
	return onEach(clusters, func(c string) creation {
		ev, err := a.createWorkloadCopy(ctx, c, wl)
		return creation{ev: ev, err: err}
	})
}

// createWorkloadCopy creates wl's copy on a worker. A create that fails for
// a reason a person must fix (a foreign object of the same name, a missing
// namespace) passes that worker over for a while and returns an event.
func (a *Actor) createWorkloadCopy(ctx context.Context, c string, wl *kueue.Workload) (*plan.Event, error) {
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return nil, nil // Not connected now; the next plan will see it.
	}
	copy := workload.CopyFor(wl, a.Origin, remote.PreemptionGates())
	err = remote.Client.Create(ctx, copy)
	switch {
	case err == nil:
		now := a.Now()
		a.Expectations.Assume(c, wl.UID, expect.Demand{Queue: workload.Queue(wl), PodSets: workload.PodSets(wl)}, now)
		a.Expectations.Created(expect.CopyKey{Cluster: c, Kind: workload.GVK.Kind, Workload: wl.UID}, copy.UID, copy.ResourceVersion, now)
		a.Expectations.Recovered(expect.NamespaceKey{Cluster: c, Namespace: wl.Namespace})
		return nil, nil
	case apierrors.IsAlreadyExists(err):
		existing := &kueue.Workload{}
		if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(wl), existing); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if workload.Owned(existing, a.Origin) {
			return nil, nil // Ours; the informer has not seen it yet.
		}
		return a.skip(wl, c, foreignSkip, courier.EventForeignObject, "holds a Workload Courier did not create",
			fmt.Sprintf("Worker %q has a Workload %s/%s that Courier did not create; Courier leaves it alone and passes the worker over.", c, wl.Namespace, wl.Name)), nil
	case isNamespaceMissing(err):
		return a.skip(wl, c, namespaceSkip, courier.EventNamespaceMissing, fmt.Sprintf("namespace %q does not exist there", wl.Namespace),
			fmt.Sprintf("Namespace %q does not exist on worker %q; create it there, with LocalQueue %q, to dispatch to that worker.", wl.Namespace, c, wl.Spec.QueueName)), nil
	case isRefused(err):
		return a.refused(wl, c, workload.GVK.Kind, copy, err), nil
	case isWorkerFault(err):
		// Retrying there alone would hold every job that chose the worker
		// for as long as it lasts; another worker may take them meanwhile.
		until := a.Now().Add(failedSkip)
		a.Expectations.Failing(expect.NamespaceKey{Cluster: c, Namespace: wl.Namespace}, expect.Note{Reason: fmt.Sprintf("failed to create Workload %s/%s; passed over until %s",
			wl.Namespace, wl.Name, until.UTC().Format(time.TimeOnly)), Until: until}, a.Now())
		return a.skip(wl, c, failedSkip, courier.EventCreateFailed, "failed to create the Workload",
			plan.Truncate(fmt.Sprintf("Worker %q failed to create Workload %s/%s: %v. Courier passes the worker over for %s, for this and the other jobs of namespace %q; if it lasts, check that worker's Kueue.",
				c, wl.Namespace, wl.Name, err, failedSkip, wl.Namespace), plan.MaxNoteLength)), nil
	default:
		return nil, err
	}
}

// failedInAdmission tells a server error from an admission webhook the
// worker's API server could not call: admission comes before storage, so
// nothing was written, and the job may go elsewhere at once. The API
// server says so only in the message.
func failedInAdmission(err error) bool {
	return strings.Contains(err.Error(), "failed calling webhook")
}

// isWorkerFault tells a create the worker failed for a reason of its own,
// not of the object's: a server error, such as an admission webhook the
// worker's API server cannot call.
func isWorkerFault(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// createJob creates the job on the worker it is placed on, after the
// objects it needs there (its PodGroups), so that its pods find them.
func (a *Actor) createJob(ctx context.Context, c string, wl *kueue.Workload, job workload.Job) (*plan.Event, error) {
	if job.Obj == nil {
		return nil, errors.New("the manager's job is gone")
	}
	remote, err := a.Remotes.Get(c)
	if err != nil {
		return nil, err
	}
	copies, err := a.jobCopies(c, wl, job)
	if err != nil {
		return nil, err
	}
	jobCopy := copies[len(copies)-1]
	for _, copy := range copies {
		created, ev, err := a.createJobCopy(ctx, remote, wl, copy)
		switch {
		case err != nil:
			return nil, err
		case ev != nil:
			// The job cannot go there: its copies go, so that the check
			// turns Retry and the job goes elsewhere.
			if _, err := a.deleteCopies(ctx, c, wl.Namespace, wl.Name, workload.Job{}); err != nil {
				return ev, err
			}
			return ev, nil
		case created && copy == jobCopy:
			a.Expectations.Created(expect.CopyKey{Cluster: c, Kind: job.Adapter.GVK().Kind, Workload: wl.UID}, copy.GetUID(), copy.GetResourceVersion(), a.Now())
			metrics.Dispatched(c)
		}
	}
	return nil, nil
}

// jobCopies are what the job needs on worker c, in the order they are
// created: its PodGroups and their core Workloads, then the job itself,
// each marked with the manager Workload and its admission.
func (a *Actor) jobCopies(c string, wl *kueue.Workload, job workload.Job) ([]*unstructured.Unstructured, error) {
	copies := make([]*unstructured.Unstructured, 0, len(job.Deps)+1)
	for _, dep := range job.Deps {
		copy := adapter.CopyForWorker(dep, a.Origin)
		labels := copy.GetLabels()
		labels[courier.WorkloadLabel] = wl.Name
		copy.SetLabels(labels)
		copies = append(copies, copy)
	}
	jobCopy, err := job.Adapter.RemoteCopy(job.Obj, adapter.Destination{Workload: wl.Name, Origin: a.Origin, RuntimePatch: job.Patches[c]})
	if err != nil {
		return nil, err
	}
	copies = append(copies, jobCopy)
	for _, copy := range copies {
		annotations := copy.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[courier.ManagerUIDAnnotation] = string(wl.UID)
		annotations[courier.AdmissionAnnotation] = strconv.Itoa(int(workload.Evictions(wl)))
		copy.SetAnnotations(annotations)
	}
	return copies, nil
}

// createJobCopy creates one of the job's copies on remote. A create that
// cannot go through there (refused, failed by the worker, a same-name
// object Courier does not own) passes the worker over and returns the
// event that says why; one of Courier's own already there is no error.
// created says whether this create made it.
func (a *Actor) createJobCopy(ctx context.Context, remote *cluster.Remote, wl *kueue.Workload, copy *unstructured.Unstructured) (created bool, ev *plan.Event, err error) {
	c := remote.Name
	err = remote.Client.Create(ctx, copy)
	switch {
	case err == nil:
		return true, nil, nil
	case isRefused(err):
		return false, a.refused(wl, c, copy.GetKind(), copy, err), nil
	case isWorkerFault(err):
		// A server error can follow a write that committed: the copy is
		// read back, and one that may yet show counts as there a while.
		if a.committed(ctx, remote, wl, copy) {
			return true, nil, nil
		}
		if _, isJob := a.Adapters[copy.GroupVersionKind().GroupKind()]; isJob && !failedInAdmission(err) {
			a.Expectations.Created(expect.CopyKey{Cluster: c, Kind: copy.GetKind(), Workload: wl.UID}, "", "", a.Now())
		}
		// The job never ran: it goes to another worker rather than wait,
		// retried there alone, for as long as the failure lasts.
		return false, a.skip(wl, c, failedSkip, courier.EventCreateFailed, "failed to create the "+copy.GetKind(),
			plan.Truncate(fmt.Sprintf("Worker %q failed to create %s %s/%s: %v. Courier sends the job to another worker and passes this one over for %s; if it lasts, check the controller whose webhook failed there.",
				c, copy.GetKind(), copy.GetNamespace(), copy.GetName(), err, failedSkip), plan.MaxNoteLength)), nil
	case !apierrors.IsAlreadyExists(err):
		return false, nil, fmt.Errorf("creating %s %s: %w", copy.GetKind(), copy.GetName(), err)
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(copy.GroupVersionKind())
	if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(copy), existing); err != nil {
		return false, nil, client.IgnoreNotFound(err)
	}
	if workload.Owned(existing, a.Origin) {
		return false, nil, nil
	}
	return false, a.skip(wl, c, foreignSkip, courier.EventForeignObject, fmt.Sprintf("holds a %s Courier did not create", copy.GetKind()),
		fmt.Sprintf("Worker %q has a %s %s/%s that Courier did not create; Courier leaves it alone and passes the worker over.", c, copy.GetKind(), copy.GetNamespace(), copy.GetName())), nil
}

// refused passes worker c over after it refused to create obj, quoting
// the refusal: retrying the same create, in silence, would not succeed.
func (a *Actor) refused(wl *kueue.Workload, c, kind string, obj metav1.Object, err error) *plan.Event {
	return a.skip(wl, c, refusedSkip, courier.EventCreateRefused, "refused the "+kind,
		plan.Truncate(fmt.Sprintf("Worker %q refused to create %s %s/%s: %v. Fix what it names on that worker; Courier passes the worker over meanwhile.",
			c, kind, obj.GetNamespace(), obj.GetName(), err), plan.MaxNoteLength))
}

// isRefused tells a create the worker refused as it is (its admission
// webhooks or policies, its API's validation, its RBAC, a CRD being
// deleted), which only a change on the worker can let through.
func isRefused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err)
}

// How long a worker is passed over for a Workload after a create there
// failed for a reason a person must fix.
const (
	foreignSkip   = 5 * time.Minute
	namespaceSkip = 30 * time.Second
	// refusedSkip: a worker's admission or validation refused a create;
	// the same create would be refused again until someone changes it.
	refusedSkip = time.Minute
	// failedSkip: a worker failed a create with a server error of its own
	// (its Kueue's webhook unreachable, say); it may be back in a moment.
	failedSkip = 30 * time.Second
)

// skip passes worker c over for wl for a while, giving why in a few words
// (the placement message lists it) and returns the event that says it in
// full.
func (a *Actor) skip(wl *kueue.Workload, c string, d time.Duration, reason, short, msg string) *plan.Event {
	a.Expectations.PassOver(wl.UID, c, expect.Note{Reason: short, Until: a.Now().Add(d)}, a.Now())
	metrics.Rejected(c, reason)
	return &plan.Event{Type: "Warning", Reason: reason, Message: msg, Cluster: c}
}

// isNamespaceMissing tells a create refused for want of a namespace.
func isNamespaceMissing(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// committed reads back a copy whose create the worker failed with a server
// error: one of Courier's, made for wl, is there, and copy takes its UID
// and version. A worker that cannot tell either counts as not: the copy
// still counts as there for a while (see expect.Created).
func (a *Actor) committed(ctx context.Context, remote *cluster.Remote, wl *kueue.Workload, copy *unstructured.Unstructured) bool {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(copy.GroupVersionKind())
	if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(copy), existing); err != nil {
		return false
	}
	if !workload.Owned(existing, a.Origin) || existing.GetAnnotations()[courier.ManagerUIDAnnotation] != string(wl.UID) {
		return false
	}
	copy.SetUID(existing.GetUID())
	copy.SetResourceVersion(existing.GetResourceVersion())
	return true
}
