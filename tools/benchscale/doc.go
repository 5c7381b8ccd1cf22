// Package benchscale measures Courier's own cost per dispatch, apart from
// Kueue's: CPU time, memory and API requests of the courier process, and
// its throughput and latency, for a manager and W workers with N pending
// workloads. It runs the real courier binary as a process against real
// kube-apiserver and etcd processes (test/integration/framework), plays
// Kueue itself, reads Courier's CPU and memory from /proc and counts its
// requests in the API servers' audit logs, which record Courier's user
// alone. `courier-bench scale` (make bench-scale) runs it.
package benchscale
