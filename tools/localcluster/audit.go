package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorkerUser is the identity dispatchers use on the workers: Courier's
// ServiceAccount of config/worker/rbac.yaml, which the MultiKueue clusters
// of ConfigureMultiKueue reuse, so that the workers' audit logs count both
// alike; the user agent tells them apart.
const WorkerUser = "system:serviceaccount:" + CourierNamespace + ":" + workerServiceAccount

// managerAuditPolicy logs every request to the manager once when answered,
// without bodies, and each watch also when it starts (ResponseStarted), so
// that the requests of every identity are counted and each watch's life is
// known.
const managerAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// workerAuditPolicy logs the dispatcher identity's requests and every
// identity's watches, and nothing else, so that auditing costs the
// workers' API servers little: the watches of the others are what the
// dispatcher's share of the watch events is told from.
const workerAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + WorkerUser + `"]
- level: Metadata
  verbs: ["watch"]
- level: None
`

// writeAuditPolicy writes the audit policy kwokctl gives a cluster's API
// server, the manager's or a worker's, and returns its path.
func writeAuditPolicy(dir string, manager bool) (string, error) {
	name, policy := "audit-policy-worker.yaml", workerAuditPolicy
	if manager {
		name, policy = "audit-policy-manager.yaml", managerAuditPolicy
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		return "", fmt.Errorf("writing the audit policy: %w", err)
	}
	return path, nil
}

// KwokWorkdir is the folder kwokctl keeps a cluster's files in: its
// components' logs under logs/ and PIDs under pids/.
func (e *Env) KwokWorkdir(cluster string) string {
	return filepath.Join(e.Dir, "kwok", cluster, "clusters", cluster)
}

// AuditLog is the path of a cluster's API server audit log, written when
// Options.Audit is set.
func (e *Env) AuditLog(cluster string) string {
	return filepath.Join(e.KwokWorkdir(cluster), "logs", "audit.log")
}
