// Package cluster owns Courier's connections to worker clusters, one per
// WorkerCluster, in the manner of Cluster API's cluster cache.
//
// A connection is built from a kubeconfig that must embed its credentials
// (see ParseKubeconfig). Each connection runs in its own goroutine with its
// own clients, informers and timeouts, so a slow, hung or unreachable worker
// never delays another. A connection checks its worker's health
// periodically; on failure it tears its informers down and reconnects with
// capped exponential backoff. Failures are classified as configuration
// errors (bad Secret, invalid or insecure kubeconfig, refused credentials),
// which need a person, or network loss, which passes on its own.
//
// Each connection also watches its worker's Kueue quota objects, unfiltered,
// and serves the worker's capacity from a snapshot (see capacity.go for what
// it approximates).
package cluster
