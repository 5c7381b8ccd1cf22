// Package benchstack measures placement on the full stack: a manager and
// two identical workers as local kwokctl clusters with the real Kueue,
// Trainer and JobSet (test/localcluster), and Courier as a process. It
// submits one-GPU TrainJobs whose pods finish at once, at a fixed rate,
// follows each job's copies on the workers with informers and its manager
// Workload until Finished, and reads Courier's own request counts to the
// workers from its Prometheus metrics before and after. It checks two
// placement targets: how the jobs split between the workers, and how many
// requests, and writes, each costs the workers. `courier-bench stack`
// (make bench-stack) runs it.
package benchstack
