// Package localcluster brings up local multi-cluster environments with the
// real peers: a manager and N workers as kwokctl clusters (binary runtime,
// simulated nodes), Kueue on every cluster, Trainer and JobSet on the
// workers, and Courier on the manager, all as local processes. Their
// webhooks are reached through URL webhook configurations with a CA it
// generates. Everything lives under one directory: kubeconfigs, logs, and a
// state file recording the PIDs it started, so that Down stops exactly
// those.
package localcluster
