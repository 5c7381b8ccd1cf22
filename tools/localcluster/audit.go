package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorkerUser is the identity dispatchers use on the workers: Courier's
// ServiceAccount of config/worker/rbac.yaml, which the MultiKueue clusters
// of ConfigureMultiKueue reuse, so that the workers' audit logs count both
// alike.
const WorkerUser = "system:serviceaccount:" + CourierNamespace + ":" + workerServiceAccount

// auditPolicy logs the dispatcher identity's requests once each, when
// answered, without bodies; nothing else, so that auditing costs the
// workers' API servers little.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: ["` + WorkerUser + `"]
- level: None
`

// writeAuditPolicy writes the audit policy kwokctl gives the workers' API
// servers, and returns its path.
func writeAuditPolicy(dir string) (string, error) {
	path := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(path, []byte(auditPolicy), 0o600); err != nil {
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
// Options.AuditWorkers is set.
func (e *Env) AuditLog(cluster string) string {
	return filepath.Join(e.KwokWorkdir(cluster), "logs", "audit.log")
}
