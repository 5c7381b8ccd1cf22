package observe

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
)

// remoteState reads what one worker holds for wl, by name: its Workload
// copy and its job copy, each a single read from the informers. Objects
// Courier deleted count as gone, whether or not the informer has seen it.
func (ob *Observer) remoteState(ctx context.Context, remote *cluster.Remote, wl *kueue.Workload, job workload.Job, seen *expect.Seen) (plan.Remote, error) {
	var rs plan.Remote
	now := ob.Now()
	if remote.Serves(workload.GVK) {
		copy := &kueue.Workload{}
		err := remote.Client.Get(ctx, client.ObjectKeyFromObject(wl), copy)
		switch {
		case err == nil && ob.Expectations.Leaving(copy, now):
			rs.UnseenWorkload = ob.createdLately(remote.Name, workload.GVK, wl.UID, now)
		case err == nil && workload.IsCopyOf(copy, wl) && !workload.OfEarlierAdmission(copy, wl):
			rs.Workload = copy
			if at, ok := ob.Expectations.GateOpenedAt(copy.UID, now); ok {
				rs.GateOpened = &metav1.Time{Time: at}
			}
		case err == nil:
			rs.Stale = true
		case !apierrors.IsNotFound(err):
			return rs, err
		default:
			rs.UnseenWorkload = ob.createdLately(remote.Name, workload.GVK, wl.UID, now)
		}
	}
	if job.Adapter != nil && job.Name != "" && remote.Serves(job.Adapter.GVK()) {
		if err := ob.jobCopyState(ctx, remote, wl, job, &rs, seen); err != nil {
			return rs, err
		}
	}
	if !rs.HasJob && rs.Workload == nil && !rs.Stale && !rs.OldJob {
		// What a job needs may outlive it, if the job went behind
		// Courier's back; it goes too.
		for _, gvk := range workload.DepKinds {
			items, err := remote.List(ctx, gvk, client.InNamespace(wl.Namespace), client.MatchingFields{workload.Index: wl.Name})
			if err != nil {
				return rs, err
			}
			for i := range items {
				rs.Stale = rs.Stale || !ob.Expectations.IsDeleted(items[i].GetUID(), now)
			}
		}
	}
	return rs, nil
}

// jobCopyState reads the job's copy on remote into rs: there and how it
// ended, or old (being deleted, of an earlier admission or Workload), or
// gone, leaving what ran its pods maybe, or created moments ago and not
// shown yet.
func (ob *Observer) jobCopyState(ctx context.Context, remote *cluster.Remote, wl *kueue.Workload, job workload.Job, rs *plan.Remote, seen *expect.Seen) error {
	now := ob.Now()
	copy := &unstructured.Unstructured{}
	copy.SetGroupVersionKind(job.Adapter.GVK())
	err := remote.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: job.Name}, copy)
	switch {
	case apierrors.IsNotFound(err):
		rem, err := ob.remnantLeft(ctx, remote, wl.Namespace, job.Name, seen)
		if err != nil {
			return err
		}
		rs.OldJob, rs.Remnant, rs.RemnantUnknown, rs.Held = rem.left, rem.left, rem.unknown, rem.held
		rs.UnseenJob = ob.createdLately(remote.Name, job.Adapter.GVK(), wl.UID, now)
		return nil
	case err != nil:
		return err
	case ob.Expectations.IsDeleted(copy.GetUID(), now):
		// Deleted, with its pods first where the kind allows: until it
		// (and, if not, what runs its pods, noted by deleteCopies) is gone
		// they may run.
		rs.OldJob = true
	case !workload.JobCopyOf(copy, wl) || workload.OfEarlierAdmission(copy, wl):
		// A copy made for another Workload of a job of the same name, or
		// for an admission before the last eviction, which may have run the
		// job to its end before the eviction reached it.
		rs.Stale, rs.OldJob = true, true
		if out := job.Adapter.Outcome(copy); out.Finished && workload.JobCopyOf(copy, wl) {
			rs.EarlierEnd, rs.JobCopy = &out, copy
			rs.FinalMirroredAt, _ = ob.Expectations.MirroredAt(copy.GetUID(), now)
		}
	default:
		// A copy someone else is deleting still says how the job ended.
		rs.OldJob = copy.GetDeletionTimestamp() != nil
		if n, ok := expect.NewRemnant(remote.Name, job.Adapter, copy); rs.OldJob && ok {
			seen.Deleting = append(seen.Deleting, n)
		}
		rs.HasJob, rs.JobCopy = true, copy
		rs.JobOutcome = job.Adapter.Outcome(copy)
		rs.FinalMirroredAt, _ = ob.Expectations.MirroredAt(copy.GetUID(), now)
		if job.Obj != nil {
			patch, err := job.Adapter.StatusPatch(job.Obj, copy)
			rs.JobMirrored = err == nil && patch == nil
			if !rs.JobMirrored && !rs.JobOutcome.Finished {
				rs.MirrorIn, rs.JobMirrored = ob.mirrorIn(job, copy, now)
			}
		}
	}
	if rs.OldJob {
		rs.Held = heldBy(copy.GetKind(), copy)
	}
	return nil
}

// mirrorIn is how long the changed status of a running job's copy waits
// before it is mirrored, or whether it is not worth a write at all. A copy
// whose conditions tell another phase than the manager's job (see
// adapter.PhaseChanged) is mirrored StatusMirrorDelay after the later of
// the copy's creation, the last mirror and the change on the worker; a
// copy still suspended by its worker's Kueue, in the phase the manager's
// job shows, is not mirrored until it changes phase; any other change, of
// its counts of pods, waits progressMirrorFactor times as long. A starting
// job's status changes several times in a few seconds, and a running one's
// counts move with each pod: mirroring each step would be a write to the
// manager each, and waiting out the delay after a change lets a job that
// ends moments later show both in one. The job's end is never held.
func (ob *Observer) mirrorIn(job workload.Job, copy *unstructured.Unstructured, now time.Time) (wait time.Duration, held bool) {
	if ob.StatusMirrorDelay <= 0 {
		return 0, false
	}
	since := copy.GetCreationTimestamp().Time
	if at, ok := ob.Expectations.StatusMirroredAt(job.Obj.GetUID(), now); ok && at.After(since) {
		since = at
	}
	wait = ob.StatusMirrorDelay
	changed, at := adapter.PhaseChanged(job.Obj, copy)
	switch {
	case !changed && adapter.Suspended(copy):
		// Under a burst a worker's Kueue may take half a minute to resume
		// a copy it admitted; the manager's job shows no more by a
		// mirrored suspension than by none.
		return 0, true
	case !changed:
		wait *= progressMirrorFactor
	case at.After(since) && !at.After(now):
		// A time ahead of this clock is the worker's skew, not a change
		// still to come: it would hold the mirror for as long.
		since = at
	}
	return max(since.Add(wait).Sub(now), 0), false
}

// progressMirrorFactor stretches statusMirrorDelay for a change of a
// running job's status that leaves its phase as it was: 30 s by default.
const progressMirrorFactor = 6

// heldBy names the finalizers that hold obj, of kind, while it is being
// deleted, and since when: a job copy, or the dependent that ran a deleted
// copy's pods; "" for an object not being deleted or held by none of them.
// Courier's own, which it releases as it deletes, and the garbage
// collector's, which a foreground delete sets until the pods are gone, are
// not named: those go by themselves.
func heldBy(kind string, obj metav1.Object) string {
	ts := obj.GetDeletionTimestamp()
	if ts == nil {
		return ""
	}
	var held []string
	for _, f := range obj.GetFinalizers() {
		if f != courier.RemoteFinalizer && f != metav1.FinalizerDeleteDependents && f != metav1.FinalizerOrphanDependents {
			held = append(held, f)
		}
	}
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s/%s has been deleting since %s, held by the finalizers %s",
		kind, obj.GetNamespace(), obj.GetName(), ts.UTC().Format(time.RFC3339), strings.Join(held, ", "))
}

// remnantState is what a worker shows of the dependent that ran the pods
// of a job copy deleted in the background.
type remnantState struct {
	// left: it is still there, or Courier cannot tell it went.
	left bool
	// unknown says why Courier cannot tell, if so.
	unknown string
	// held names the finalizers that keep it while it is being deleted
	// (see heldBy).
	held string
}

// remnantLeft reports whether what ran the pods of a job copy deleted in
// the background, ns/name on the worker, is still there: the copy's
// runner, or pods of it that have not stopped; and if Courier cannot tell,
// why. It reads the worker's API server: neither is in the informers, and
// the reads are made only for a job whose copy Courier saw go.
func (ob *Observer) remnantLeft(ctx context.Context, remote *cluster.Remote, ns, name string, seen *expect.Seen) (remnantState, error) {
	key := expect.RemnantKey{Cluster: remote.Name, Namespace: ns, Name: name}
	rem, ok := ob.Expectations.RemnantOf(key, ob.Now())
	if !ok {
		return remnantState{}, nil
	}
	state, err := stillRuns(ctx, remote, key, rem)
	if err == nil && !state.left {
		seen.Gone = append(seen.Gone, expect.RemnantNote{Key: key, Remnant: rem})
	}
	return state, err
}

// stillRuns reports whether the runner or a pod of remnant rem, of the
// copy under key, is still there. Gone, made for another copy since, or
// of a kind the worker does not serve: nothing of the deleted copy runs.
func stillRuns(ctx context.Context, remote *cluster.Remote, key expect.RemnantKey, rem expect.Remnant) (remnantState, error) {
	if rem.Runner.Kind != "" {
		state, err := runnerLeft(ctx, remote, key, rem)
		if err != nil || state.left {
			return state, err
		}
	}
	if rem.PodLabel != "" {
		return podsLeft(ctx, remote, key, rem.PodLabel)
	}
	return remnantState{}, nil
}

// vanishedCopy looks, when the job's copy on worker c, where it runs, is
// gone without Courier having seen it go (someone deleted it there in the
// background), for what still runs its pods; Courier waits for that as for
// the remnant of a copy it deleted itself, and the job goes nowhere else
// before.
func (ob *Observer) vanishedCopy(ctx context.Context, res *Result, c string) error {
	o := &res.Observed
	rs, ok := o.Remotes[c]
	if !ok || rs.HasJob || rs.OldJob || rs.UnseenJob || res.Job.Adapter == nil || res.Job.Name == "" {
		return nil
	}
	// A job that ended goes nowhere else, so nothing left of its copy can
	// run it twice; and the copy gone is most often the one Courier
	// removed once the job finished.
	if o.JobEnd.Finished || meta.IsStatusConditionTrue(o.Workload.Status.Conditions, kueue.WorkloadFinished) {
		return nil
	}
	// Ready says the copy was created there; before, nothing of it runs.
	if st := findCheck(o.Workload, res.Check); st == nil || st.State != kueue.CheckStateReady {
		return nil
	}
	note, ok := expect.VanishedCopy(c, res.Job.Adapter, o.Workload.Namespace, res.Job.Name, "")
	if !ok {
		return nil
	}
	remote, err := ob.Remotes.Get(c)
	if err != nil {
		return nil // Out of reach: the lost-worker policy decides.
	}
	state, err := stillRuns(ctx, remote, note.Key, note.Remnant)
	if err != nil || !state.left {
		return err
	}
	rs.OldJob, rs.Remnant, rs.RemnantUnknown, rs.Held = true, true, state.unknown, state.held
	o.Remotes[c] = rs
	res.Seen.Deleting = append(res.Seen.Deleting, note)
	return nil
}

// runnerLeft reports whether the runner of remnant rem, of the copy under
// key, is still there.
func runnerLeft(ctx context.Context, remote *cluster.Remote, key expect.RemnantKey, rem expect.Remnant) (remnantState, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(rem.Runner)
	err := remote.APIReader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, obj)
	switch {
	case err == nil && workload.ControlledBy(obj, rem.Owner):
		return remnantState{left: true, held: heldBy(rem.Runner.Kind, obj)}, nil
	case err == nil, apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return remnantState{}, nil
	case apierrors.IsForbidden(err):
		return remnantState{left: true, unknown: fmt.Sprintf("Courier may not read %s there to tell; grant get on %s (config/worker/rbac.yaml)",
			workload.Resource(rem.Runner), workload.Resource(rem.Runner)+"."+rem.Runner.Group)}, nil
	default:
		return remnantState{}, fmt.Errorf("reading the %s of the deleted job copy: %w", rem.Runner.Kind, err)
	}
}

// podsLeft reports whether a pod of the copy under key, labelled with its
// name, has not stopped: a pod being deleted still runs its containers
// until they exit. Only the copy's name is known, not its UID, once it is
// gone; no other copy of that name is on the worker while Courier waits.
func podsLeft(ctx context.Context, remote *cluster.Remote, key expect.RemnantKey, label string) (remnantState, error) {
	// Metadata alone cannot say a pod stopped; a full list of the job's
	// pods is small, and made only while a deleted copy is waited for.
	pods := &corev1.PodList{}
	err := remote.APIReader.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabels{label: key.Name})
	switch {
	case apierrors.IsForbidden(err):
		return remnantState{left: true, unknown: "Courier may not list pods there to tell whether the deleted copy's pods stopped; grant list on pods (config/worker/rbac.yaml)"}, nil
	case err != nil:
		return remnantState{}, fmt.Errorf("listing the pods of the deleted job copy: %w", err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			return remnantState{left: true, held: heldBy("Pod", pod)}, nil
		}
	}
	return remnantState{}, nil
}
