// Package fence is the worker-side fence (cmd/courier-fence): it stops the
// copies a Courier manager made on this worker once that manager has stopped
// renewing its heartbeat here, so that Courier may move a lost worker's jobs
// without running them twice (docs/fence.md).
//
// The algorithm, per origin (one Courier manager), each poll interval:
//
//  1. List the Leases in the fence's namespace. Each Lease
//     courier-heartbeat-<origin> is that origin's heartbeat; the fence
//     stamps, by its own monotonic clock, the send time of the list that
//     first showed its current resourceVersion (a Lease present at the
//     first list counts from the fence's start). It never reads Courier's
//     clock, only whether the Lease changed. A list, not a watch: a watch
//     event delivered late would make the fence stamp late, and fence late.
//  2. The heartbeat is stale once it has not changed for longer than the
//     Lease's leaseDurationSeconds.
//  3. Optionally, in the background, get this worker's WorkerCluster on the
//     manager each interval: status.revokedSince set means Courier gave up
//     on this worker.
//  4. Decide (Decide, a pure function): a fresh heartbeat is left alone; a
//     stale one is fenced unless the manager, read successfully within the
//     heartbeat's duration, has not revoked the worker (Courier is cut off
//     from the worker but is not moving its jobs). A manager unread for
//     longer than that duration, a revoked worker, or no manager configured
//     fences.
//  5. While an origin is fenced, every Workload labelled with it that has
//     not finished and is still active is patched to spec.active=false with
//     the annotation courier.dev/fenced, and gets a Fenced event: the
//     worker's Kueue evicts it and suspends its job. A renewal lifts the
//     fence for Workloads created later; the fence never reactivates one,
//     Courier decides. A heartbeat Lease deleted forgets its origin. These
//     writes run beside the lists, so that fencing thousands of Workloads
//     of one origin never delays seeing another's renewal.
//  6. Every 10 seconds, and whenever they change, publish the fenced origins
//     and whether the manager is read on the Lease courier-fence, so that
//     Courier sees that a fence answers on this worker.
package fence
