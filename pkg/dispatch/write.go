package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/expect"
	"github.com/courierdev/courier/pkg/metrics"
)

// writeStatus applies Courier's part of the Workload status in one patch,
// guarded by the resourceVersion so that Kueue's concurrent writes are not
// lost. A change without a State leaves the check alone: the Workload no
// longer carries one Courier can write.
func (r *Reconciler) writeStatus(ctx context.Context, wl *kueue.Workload, check kueue.AdmissionCheckReference, s *StatusChange) error {
	version := wl.ResourceVersion
	now := metav1.NewTime(r.now())
	if s.State != "" {
		state := findCheck(wl, check)
		if state == nil {
			return fmt.Errorf("admission check %q is not on Workload %s/%s", check, wl.Namespace, wl.Name)
		}
		if state.State != s.State {
			state.LastTransitionTime = now
		}
		state.State, state.Message = s.State, s.Message
	}
	wl.Status.ClusterName = s.ClusterName
	wl.Status.NominatedClusterNames = s.Nominated
	if s.Finished != nil {
		cond := *s.Finished
		cond.ObservedGeneration, cond.LastTransitionTime = wl.Generation, now
		meta.SetStatusCondition(&wl.Status.Conditions, cond)
	}
	patch, err := statusPatch(wl, s.State != "", s.Finished != nil)
	if err != nil {
		return err
	}
	if err := r.client.Status().Patch(ctx, wl, patch); err != nil {
		r.noteConflict(wl, version, err)
		return fmt.Errorf("patching Workload status: %w", err)
	}
	r.wroteOver(wl, version)
	return nil
}

// wroteOver remembers that Courier's write replaced version of wl, unless
// the API server stored nothing new: no event follows a write that changed
// nothing, and a pass waiting for one would wait for expect.WrittenTTL.
func (r *Reconciler) wroteOver(obj metav1.Object, version string) {
	if obj.GetResourceVersion() != version {
		r.exp.WroteOver(obj.GetUID(), version, r.now())
	}
}

// writePlacement records p on the manager Workload, or removes the record
// when p is nil. The write is guarded by the resourceVersion: a decision
// made on an out-of-date Workload, which may not know of a placement made
// a moment ago, is refused and made again.
func (r *Reconciler) writePlacement(ctx context.Context, wl *kueue.Workload, p *Placement) error {
	version := wl.ResourceVersion
	var record *string // nil: the record goes
	if p != nil {
		data, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encoding placement: %w", err)
		}
		record = ptr.To(string(data))
	}
	patch, err := placementPatch(version, record)
	if err != nil {
		return err
	}
	if err := r.client.Patch(ctx, wl, patch); err != nil {
		r.noteConflict(wl, version, err)
		return fmt.Errorf("recording the placement: %w", err)
	}
	r.wroteOver(wl, version)
	if p != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Placing workload", "cluster", p.Cluster, "evictions", p.Evictions)
		metrics.Placed(p.Cluster)
	}
	return nil
}

// noteConflict remembers that a write on version of wl was refused for a
// conflict: someone wrote a newer version, which the next pass waits for.
// Kueue's newer version may change nothing a plan reads (the PodsReady it
// sets as a job starts, say): its event must queue that pass all the same.
func (r *Reconciler) noteConflict(wl *kueue.Workload, version string, err error) {
	if apierrors.IsConflict(err) {
		r.exp.WroteOver(wl.UID, version, r.now())
	}
}

// creation is what creating a Workload copy did on one worker.
type creation struct {
	// lately: created moments ago, and not in the informer yet.
	lately bool
	ev     *Event
	err    error
}

// createOn creates wl's copies on the clusters, on all at once.
func (r *Reconciler) createOn(ctx context.Context, clusters []string, wl *kueue.Workload) []creation {
	return onEach(clusters, func(c string) creation {
		if r.createdLately(c, workloadGVK, wl.UID) {
			return creation{lately: true}
		}
		ev, err := r.createWorkloadCopy(ctx, c, wl)
		return creation{ev: ev, err: err}
	})
}

// createWorkloadCopy creates wl's copy on a worker. A create that fails for
// a reason a person must fix (a foreign object of the same name, a missing
// namespace) passes that worker over for a while and returns an event.
func (r *Reconciler) createWorkloadCopy(ctx context.Context, c string, wl *kueue.Workload) (*Event, error) {
	remote, err := r.remotes.Get(c)
	if err != nil {
		return nil, nil // Not connected now; the next plan will see it.
	}
	copy := remoteWorkload(wl, r.opts.Origin)
	err = remote.Client.Create(ctx, copy)
	switch {
	case err == nil:
		now := r.now()
		r.exp.Assume(c, wl.UID, expect.Demand{Queue: queueOf(wl), PodSets: podSetsOf(wl)}, now)
		r.exp.Created(expect.CopyKey{Cluster: c, Kind: workloadGVK.Kind, Workload: wl.UID}, copy.UID, copy.ResourceVersion, now)
		r.exp.Recovered(expect.NamespaceKey{Cluster: c, Namespace: wl.Namespace})
		return nil, nil
	case apierrors.IsAlreadyExists(err):
		existing := &kueue.Workload{}
		if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(wl), existing); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if r.owned(existing) {
			return nil, nil // Ours; the informer has not seen it yet.
		}
		return r.skip(wl, c, foreignSkip, courier.EventForeignObject, "holds a Workload Courier did not create",
			fmt.Sprintf("Worker %q has a Workload %s/%s that Courier did not create; Courier leaves it alone and passes the worker over.", c, wl.Namespace, wl.Name)), nil
	case isNamespaceMissing(err):
		return r.skip(wl, c, namespaceSkip, courier.EventNamespaceMissing, fmt.Sprintf("namespace %q does not exist there", wl.Namespace),
			fmt.Sprintf("Namespace %q does not exist on worker %q; create it there, with LocalQueue %q, to dispatch to that worker.", wl.Namespace, c, wl.Spec.QueueName)), nil
	case isRefused(err):
		return r.refused(wl, c, workloadGVK.Kind, copy, err), nil
	case isWorkerFault(err):
		// Retrying there alone would hold every job that chose the worker
		// for as long as it lasts; another worker may take them meanwhile.
		// Found by the soak (docs/soak.md, finding 25).
		until := r.now().Add(failedSkip)
		r.exp.Failing(expect.NamespaceKey{Cluster: c, Namespace: wl.Namespace}, expect.Note{Reason: fmt.Sprintf("failed to create Workload %s/%s; passed over until %s",
			wl.Namespace, wl.Name, until.UTC().Format(time.TimeOnly)), Until: until}, r.now())
		return r.skip(wl, c, failedSkip, courier.EventCreateFailed, "failed to create the Workload",
			truncate(fmt.Sprintf("Worker %q failed to create Workload %s/%s: %v. Courier passes the worker over for %s, for this and the other jobs of namespace %q; if it lasts, check that worker's Kueue.",
				c, wl.Namespace, wl.Name, err, failedSkip, wl.Namespace), maxNoteLength)), nil
	default:
		return nil, err
	}
}

// isWorkerFault tells a create the worker failed for a reason of its own,
// not of the object's: a server error, such as an admission webhook the
// worker's API server cannot call.
func isWorkerFault(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// createJob creates the job on the worker it is placed on, after the
// objects it needs there (its PodGroups), so that its pods find them.
func (r *Reconciler) createJob(ctx context.Context, c string, wl *kueue.Workload, job jobInfo) (*Event, error) {
	if job.obj == nil {
		return nil, errors.New("the manager's job is gone")
	}
	remote, err := r.remotes.Get(c)
	if err != nil {
		return nil, err
	}
	copies := make([]*unstructured.Unstructured, 0, len(job.deps)+1)
	for _, dep := range job.deps {
		copy := adapter.CopyForWorker(dep, r.opts.Origin)
		labels := copy.GetLabels()
		labels[courier.WorkloadLabel] = wl.Name
		copy.SetLabels(labels)
		copies = append(copies, copy)
	}
	jobCopy, err := job.adapter.RemoteCopy(job.obj, adapter.Destination{Workload: wl.Name, Origin: r.opts.Origin, RuntimePatch: job.patches[c]})
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
		annotations[courier.AdmissionAnnotation] = strconv.Itoa(int(evictions(wl)))
		copy.SetAnnotations(annotations)
		err := remote.Client.Create(ctx, copy)
		if err == nil {
			if copy == jobCopy {
				r.exp.Created(expect.CopyKey{Cluster: c, Kind: job.adapter.GVK().Kind, Workload: wl.UID}, copy.GetUID(), copy.GetResourceVersion(), r.now())
				metrics.Dispatched(c)
			}
			continue
		}
		var ev *Event
		switch {
		case isRefused(err):
			ev = r.refused(wl, c, copy.GetKind(), copy, err)
		case isWorkerFault(err):
			// The job never ran: it goes to another worker rather than
			// wait, retried there alone, for as long as the failure lasts.
			ev = r.skip(wl, c, failedSkip, courier.EventCreateFailed, "failed to create the "+copy.GetKind(),
				truncate(fmt.Sprintf("Worker %q failed to create %s %s/%s: %v. Courier sends the job to another worker and passes this one over for %s; if it lasts, check the controller whose webhook failed there.",
					c, copy.GetKind(), copy.GetNamespace(), copy.GetName(), err, failedSkip), maxNoteLength))
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("creating %s %s: %w", copy.GetKind(), copy.GetName(), err)
		default:
			existing := &unstructured.Unstructured{}
			existing.SetGroupVersionKind(copy.GroupVersionKind())
			if err := remote.APIReader.Get(ctx, client.ObjectKeyFromObject(copy), existing); err != nil {
				return nil, client.IgnoreNotFound(err)
			}
			if r.owned(existing) {
				continue
			}
			ev = r.skip(wl, c, foreignSkip, courier.EventForeignObject, fmt.Sprintf("holds a %s Courier did not create", copy.GetKind()),
				fmt.Sprintf("Worker %q has a %s %s/%s that Courier did not create; Courier leaves it alone and passes the worker over.", c, copy.GetKind(), copy.GetNamespace(), copy.GetName()))
		}
		// The job cannot go there: its copies go, so that the check
		// turns Retry and the job goes elsewhere.
		if _, err := r.deleteCopies(ctx, c, wl.Namespace, wl.Name, jobInfo{}); err != nil {
			return ev, err
		}
		return ev, nil
	}
	return nil, nil
}

// refused passes worker c over after it refused to create obj, quoting
// the refusal: retrying the same create, in silence, would not succeed.
func (r *Reconciler) refused(wl *kueue.Workload, c, kind string, obj metav1.Object, err error) *Event {
	return r.skip(wl, c, refusedSkip, courier.EventCreateRefused, "refused the "+kind,
		truncate(fmt.Sprintf("Worker %q refused to create %s %s/%s: %v. Fix what it names on that worker; Courier passes the worker over meanwhile.",
			c, kind, obj.GetNamespace(), obj.GetName(), err), maxNoteLength))
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
func (r *Reconciler) skip(wl *kueue.Workload, c string, d time.Duration, reason, short, msg string) *Event {
	r.exp.PassOver(wl.UID, c, expect.Note{Reason: short, Until: r.now().Add(d)}, r.now())
	metrics.Rejected(c, reason)
	return &Event{Type: "Warning", Reason: reason, Message: msg, Cluster: c}
}

// syncJob mirrors the status of the worker's job copy, as the informer
// has it, onto the manager's job.
func (r *Reconciler) syncJob(ctx context.Context, c string, wl *kueue.Workload, job jobInfo) error {
	if job.obj == nil {
		return nil
	}
	remote, err := r.remotes.Get(c)
	if err != nil {
		return nil // Out of reach; the next look mirrors what is there then.
	}
	copy := &unstructured.Unstructured{}
	copy.SetGroupVersionKind(job.adapter.GVK())
	if err := remote.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: job.name}, copy); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.mirror(ctx, job, copy)
}

// finalSync mirrors the worker job's last status before Courier finishes
// the Workload or removes the copy: from the informer's copy when that
// already shows the job's end, and otherwise from a read of the worker's
// API server. The informer of jobs may lag behind the one of Workloads,
// and the worker's Kueue finished the Workload only after it saw the job's
// end, so a read now sees at least that; a cached copy that shows the end
// holds it already, and the read, one request to the worker per job, is
// saved. The manager's answer to the status patch is the job as it is then
// stored.
func (r *Reconciler) finalSync(ctx context.Context, c string, wl *kueue.Workload, job jobInfo, cached *unstructured.Unstructured) error {
	if job.obj == nil {
		return nil // The manager's job is gone: nobody to show the status to.
	}
	copy := cached
	if copy == nil {
		remote, err := r.remotes.Get(c)
		if err != nil {
			return err
		}
		copy = &unstructured.Unstructured{}
		copy.SetGroupVersionKind(job.adapter.GVK())
		if err := remote.APIReader.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: job.name}, copy); err != nil {
			if apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("Finishing without the final job status: the worker's copy is gone", "cluster", c)
				return nil
			}
			return fmt.Errorf("reading the job copy: %w", err)
		}
	}
	if !r.owned(copy) || !jobCopyOf(copy, wl) {
		return nil
	}
	if err := r.mirror(ctx, job, copy); err != nil {
		return err
	}
	r.exp.Mirrored(copy.GetUID(), r.now())
	return nil
}

// mirror makes the manager job's status equal to the worker copy's. Once
// that status shows the job's end, it stands: the job's API refuses to take
// an end back, or to replace it with another run's (a copy a worker counted
// lost ran meanwhile), for ever, and the refusal is not retried. A mirror
// that ends the job is awaited by the next pass (see ownWrites), which
// must not dispatch the job again from a cache behind it.
func (r *Reconciler) mirror(ctx context.Context, job jobInfo, copy *unstructured.Unstructured) error {
	data, err := job.adapter.StatusPatch(job.obj, copy)
	if err != nil {
		return err
	}
	ended, version := job.adapter.Outcome(job.obj).Finished, job.obj.GetResourceVersion()
	if err := r.patchJobStatus(ctx, job.obj, data); err != nil {
		if ended && apierrors.IsInvalid(err) {
			ctrl.LoggerFrom(ctx).V(2).Info("Keeping the manager job's final status: the worker's copy differs", "copy", klog.KObj(copy), "copyUID", copy.GetUID(), "refusal", err.Error())
			return nil
		}
		return err
	}
	if !ended && job.adapter.Outcome(job.obj).Finished {
		r.wroteOver(job.obj, version)
	}
	return nil
}

// clearActivity removes the manager job's mirrored activity. The patch is
// decided on the cached job, and guarded by its version: from a cache
// behind a final status it would strip the final counts. The soak saw
// manager TrainJobs left "Complete" without their jobsStatus.
func (r *Reconciler) clearActivity(ctx context.Context, job jobInfo) error {
	data, err := job.adapter.ClearActivityPatch(job.obj)
	if err != nil || data == nil {
		return err
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return fmt.Errorf("decoding the status patch: %w", err)
	}
	patch["metadata"] = guard{ResourceVersion: job.obj.GetResourceVersion()}
	if data, err = json.Marshal(patch); err != nil {
		return fmt.Errorf("encoding the status patch: %w", err)
	}
	return r.patchJobStatus(ctx, job.obj, data)
}

// patchJobStatus applies a merge patch to a manager job's status; job
// then holds what the API server stored.
func (r *Reconciler) patchJobStatus(ctx context.Context, job *unstructured.Unstructured, data []byte) error {
	if data == nil {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, data)
	if slices.Contains(r.opts.StatusInObject, job.GroupVersionKind()) {
		return client.IgnoreNotFound(r.client.Patch(ctx, job, patch))
	}
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, job, patch))
}

func (r *Reconciler) owned(obj client.Object) bool {
	return obj.GetLabels()[courier.OriginLabel] == r.opts.Origin
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

// createdLately reports whether the copy of gvk of Workload wl that
// Courier created on cluster counts as there though the worker's informer
// does not show it (expect.StillUnseen).
func (r *Reconciler) createdLately(cluster string, gvk schema.GroupVersionKind, wl types.UID) bool {
	now := r.now()
	c, ok := r.exp.CreatedCopy(expect.CopyKey{Cluster: cluster, Kind: gvk.Kind, Workload: wl}, now)
	if !ok {
		return false
	}
	return r.exp.StillUnseen(c, now, func(version string) bool {
		remote, err := r.remotes.Get(cluster)
		// A worker out of reach holds the job back by itself.
		return err != nil || remote.Reached(gvk, version)
	})
}
