package soak

import (
	"fmt"
	"slices"
)

// deletedBehind returns what the report says of an overlap that Courier
// does not promise yet to prevent, under any policy: the remote-delete
// fault deleted the job's batch Job copy on a worker in the background, as
// kubectl does, and Courier, which does not read pods, dispatched the job
// again while the worker's garbage collector had not stopped the copy's
// pods (docs/reliability.md; finding 31 of records/soak.md, open). A
// TrainJob copy's JobSet is waited for, so its overlap is an offender. It
// returns "" for any other overlap.
func deletedBehind(o Overlap, kind JobKind, faults []*Fault) string {
	if kind != BatchJob {
		return ""
	}
	for _, f := range faults {
		if f.Kind != RemoteDelete || f.Started.IsZero() || !f.Started.Before(o.From) ||
			!slices.Contains(f.Hit, o.Job) || !slices.Contains(o.Workers, f.Target) {
			continue
		}
		return fmt.Sprintf("not promised yet (docs/reliability.md; finding 31, Courier's, open): %s at %s deleted the Job's copy on %s in the background, and Courier does not wait for a deleted Job copy's pods",
			f.Kind, clock(f.Started), f.Target)
	}
	return ""
}
