// Package benchstack measures placement on the full stack: a manager and
// two identical workers as local kwokctl clusters with the real Kueue,
// Trainer and JobSet (tools/localcluster), and Courier as a process. It
// submits one-GPU TrainJobs whose pods finish at once, at a fixed rate,
// follows each job's copies on the workers with informers and its manager
// Workload until Finished, and reads Courier's own request counts to the
// workers from its Prometheus metrics before and after. It checks two
// placement targets: how the jobs split between the workers, and how many
// requests, and writes, each costs the workers. `courier-bench stack`
// (make bench-stack) runs it.
//
// Compare (`courier-bench compare`, make bench) runs the same loads through
// Courier and through Kueue's own MultiKueue, as released and with its
// worker clients at 1,000 QPS (tools/hack/kueue-multikueue-qps.patch), and
// on request with its manager client at 1,000 QPS too, one after the other
// on the same clusters: the ClusterQueue is pointed at each
// system's AdmissionCheck in turn, after the previous phase drained. Both
// reach the workers as the same ServiceAccount, so that the workers' audit
// logs count their requests alike; /proc gives every process's CPU.
package benchstack
