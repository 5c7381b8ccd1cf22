package benchscale

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/courierdev/courier/test/integration/framework"
)

// auditFlush is how long the API servers get to write the last events of a
// phase: the log backend in batch mode writes each event as soon as it is
// taken from its buffer.
const auditFlush = time.Second

// auditBufferSize holds the events of a burst of Courier's requests; the
// API server drops what does not fit, and says so in its log.
const auditBufferSize = 200000

// auditArgs returns the kube-apiserver flags that log Courier's requests,
// for every cluster and, naming each cluster's log, per cluster, and the
// logs by cluster name. The policy records each request of CourierUser at
// Metadata level and nothing else, so that the logs count Courier alone.
func auditArgs(dir string, clusters []string) ([]string, map[string][]string, map[string]*auditLog, error) {
	policy := fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
# A request is logged when it ends, and a watch also when it starts; one
# audit ID is one request.
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: [%q]
- level: None
`, framework.CourierUser)
	policyPath := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, []byte(policy), 0o600); err != nil {
		return nil, nil, nil, fmt.Errorf("writing audit policy: %w", err)
	}
	common := []string{
		"--audit-policy-file=" + policyPath,
		"--audit-log-format=json",
		"--audit-log-mode=batch",
		fmt.Sprintf("--audit-log-batch-buffer-size=%d", auditBufferSize),
		// No rotation: phases are read from byte offsets in one file.
		"--audit-log-maxsize=0",
	}
	perCluster := map[string][]string{}
	logs := map[string]*auditLog{}
	for _, name := range clusters {
		path := filepath.Join(dir, "audit", name+".log")
		perCluster[name] = []string{"--audit-log-path=" + path}
		logs[name] = &auditLog{path: path}
	}
	return common, perCluster, logs, nil
}

// auditLog is one API server's audit log.
type auditLog struct {
	path string
}

// offset is the log's current size: where the events of a phase that
// starts now begin.
func (l *auditLog) offset() (int64, error) {
	info, err := os.Stat(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading audit log size: %w", err)
	}
	return info.Size(), nil
}

// Requests counts API requests.
type Requests struct {
	// Reads are get, list and watch; Writes are every other verb (create,
	// update, patch, delete, deletecollection).
	Reads  int `json:"reads"`
	Writes int `json:"writes"`
	// ByVerb counts by verb and resource, as "patch workloads/status", or
	// by verb and path for non-resource requests such as discovery.
	ByVerb map[string]int `json:"byVerb"`
	// Failed counts the requests answered with an error, by verb, resource
	// and status code, as "patch workloads/status 409": conflicts show
	// Courier acting on a stale cache.
	Failed map[string]int `json:"failed,omitempty"`
}

// failures is the number of failed requests.
func (r Requests) failures() int {
	n := 0
	for _, v := range r.Failed {
		n += v
	}
	return n
}

func (r *Requests) add(o Requests) {
	r.Reads += o.Reads
	r.Writes += o.Writes
	if r.ByVerb == nil {
		r.ByVerb = map[string]int{}
	}
	for k, v := range o.ByVerb {
		r.ByVerb[k] += v
	}
	for k, v := range o.Failed {
		if r.Failed == nil {
			r.Failed = map[string]int{}
		}
		r.Failed[k] += v
	}
}

// auditEvent holds the fields of an audit.k8s.io/v1 Event that are counted.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// count counts the requests received in [start, end] whose events were
// written from byte offset from on.
func (l *auditLog) count(from int64, start, end time.Time) (Requests, error) {
	r := Requests{ByVerb: map[string]int{}, Failed: map[string]int{}}
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("opening audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return r, fmt.Errorf("seeking in audit log: %w", err)
	}
	seen := map[string]bool{}
	reader := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := reader.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A last line without its newline is still being written.
			return r, nil
		}
		if err != nil {
			return r, fmt.Errorf("reading audit log: %w", err)
		}
		var ev auditEvent
		if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil {
			return r, fmt.Errorf("decoding audit event in %s: %w", l.path, err)
		}
		if seen[ev.AuditID] || ev.RequestReceived.Before(start) || ev.RequestReceived.After(end) {
			continue
		}
		seen[ev.AuditID] = true
		switch ev.Verb {
		case "get", "list", "watch":
			r.Reads++
		default:
			r.Writes++
		}
		key := ev.Verb + " " + ev.target()
		r.ByVerb[key]++
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300 {
			r.Failed[fmt.Sprintf("%s %d", key, ev.ResponseStatus.Code)]++
		}
	}
}

func (ev *auditEvent) target() string {
	if ev.ObjectRef == nil {
		path, _, _ := strings.Cut(ev.RequestURI, "?")
		return path
	}
	if ev.ObjectRef.Subresource != "" {
		return ev.ObjectRef.Resource + "/" + ev.ObjectRef.Subresource
	}
	return ev.ObjectRef.Resource
}

// droppedAuditEvents reports whether an API server's log says it dropped
// audit events, which makes the counts a lower bound.
func droppedAuditEvents(c *framework.Cluster) (bool, error) {
	f, err := os.Open(filepath.Join(c.Dir, "kube-apiserver.log"))
	if err != nil {
		return false, fmt.Errorf("opening API server log of %s: %w", c.Name, err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte("audit buffer queue blocked")) {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("reading API server log of %s: %w", c.Name, err)
	}
	return false, nil
}
