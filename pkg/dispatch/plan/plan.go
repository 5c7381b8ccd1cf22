package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/courierdev/courier/pkg/adapter"
	"github.com/courierdev/courier/pkg/dispatch/workload"
	"github.com/courierdev/courier/pkg/placement"
)

// Plan is what to do, in this order: mirror the job's status (a final
// mirror first of all: nothing else happens unless it succeeded), forward
// the job's changes, remote creates, the placement record, the job, remote
// deletes, then one status write on the manager Workload, then events.
type Plan struct {
	// FinalSync names the cluster whose final job status is mirrored onto
	// the manager's job, which must then show it: from FinalFrom, the
	// informer's copy, when that already shows the job's end, and
	// otherwise from a read of the worker itself, since the informer of
	// jobs may lag the one of Workloads.
	FinalSync string
	FinalFrom *unstructured.Unstructured
	// SyncJob names the cluster whose job status is mirrored from the
	// informer, if any.
	SyncJob string
	// ClearJobActivity removes the mirrored activity from the manager's
	// job once its copies are given up, so that Kueue can release its quota.
	ClearJobActivity bool
	// Delete lists clusters whose copies (Workload, job and what the job
	// needs) go.
	Delete []string
	// Create lists clusters that get a Workload copy.
	Create []string
	// Record is written to the manager Workload before the job is created.
	Record *workload.Placement
	// RecordMoves, if set, replaces the moves recorded on the manager
	// Workload: a worker's eviction sent the job elsewhere once more.
	RecordMoves []workload.Move
	// ClearRecord removes a placement of an earlier admission whose copies
	// are known to be gone.
	ClearRecord bool
	// CreateJob names the cluster that gets the job, if any. The status
	// change is applied only once the job exists there. Unreached are the
	// workers out of reach when the plan was made: one of them back in
	// reach by then may hold an earlier copy of the job, and the job waits
	// for a plan that sees it.
	CreateJob string
	Unreached []string
	// Forward names the cluster whose job copy (ForwardBase, as read) gets
	// Forwarding.Update, and ForwardPriority the one whose Workload copy gets the manager
	// Workload's priority.
	Forward         string
	ForwardBase     *unstructured.Unstructured
	Forwarding      *adapter.Forwarding
	ForwardPriority string
	// OpenGate names the worker whose copy gets its preemption gate opened,
	// so that its Kueue may preempt for it.
	OpenGate string
	// JobEvents are recorded on the manager's job, once per version of it.
	JobEvents []Event
	// Status is the manager Workload's status change, nil for none.
	Status *StatusChange
	// Events are recorded after the status write.
	Events []Event
	// QuietRemoval: the copies go as a finished Workload's do, which no
	// event reports; the finish itself is Kueue's event on the job, or
	// Courier's Finished when Courier wrote it.
	QuietRemoval bool
	// RequeueAfter asks for another look at this time, if set.
	RequeueAfter time.Duration
	// Recheck asks for another look at this time, if set, whatever the
	// steps before the status write did, unless one failed: a worker
	// passed over may take the job once the pass-over ends, and a copy
	// Courier created may turn out never to show.
	Recheck time.Duration
	// RemoveEverywhere removes the Workload's copies from every connected
	// worker, and nothing else is done.
	RemoveEverywhere bool
	// Decision is the placement planner's decision, if it made one.
	Decision *placement.Decision
}

// StatusChange is the part of the manager Workload's status Courier owns.
type StatusChange struct {
	State   kueue.CheckState
	Message string
	// ClusterName and Nominated are the new values of status.clusterName
	// and status.nominatedClusterNames.
	ClusterName *string
	Nominated   []string
	// Finished, if set, finishes the Workload.
	Finished *metav1.Condition
}

// Event is one event on the manager Workload.
type Event struct {
	Type, Reason, Message string
	// Cluster is the worker the event is about, if any. Its WorkerCluster
	// is the event's related object, which keeps apart events of one reason
	// about different workers: the events API folds same-reason events on
	// one object into a series that keeps only the first note.
	Cluster string
}
