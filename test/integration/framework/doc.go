// Package framework starts real Kubernetes control planes for integration
// tests: one manager and N workers, each an etcd and a kube-apiserver process
// built from their Go modules by hack/tools. Clusters start in parallel, get
// the CRDs of Courier, Kueue, Trainer and JobSet, and are stopped by PID on
// success and on failure. A worker's API server can be stopped and started
// again on the same address, to test connection loss.
package framework
