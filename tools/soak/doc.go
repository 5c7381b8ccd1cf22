// Package soak runs Courier through a fault-injection soak on the local
// clusters (tools/localcluster): a manager and three workers with the real
// Kueue, Trainer and JobSet, two Courier replicas with leader election. It
// submits TrainJobs and batch Jobs at a steady rate while a seeded schedule
// injects faults (API servers paused and killed, Courier killed, kubeconfig
// Secrets rotated and broken, remote jobs deleted, foreign same-name
// objects, Kueue restarted, the AdmissionCheck and a WorkerCluster deleted),
// records every version of every copy and pod on the workers with
// informers, and then checks named invariants: nothing ran on two workers
// at once, nothing was lost, the manager shows each job's final status,
// nothing is left behind, no check stays Pending, nothing waits while a
// worker has room. It writes a JSON report and a timeline PNG.
// `courier-bench soak` (make soak, make soak-short) runs it.
package soak
