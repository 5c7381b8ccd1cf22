package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

// CourierBinary is the binary the manager's first Courier runs now.
func (e *Env) CourierBinary() (string, error) {
	return e.binary(CourierProcess)
}

// RestartCourier stops the manager's first Courier by PID and starts
// binary in its place, with the same configuration, kubeconfig and ports,
// and waits until it serves and holds the leader Lease: jobs submitted
// before would wait on the election. One environment can so run two
// builds of Courier in turn. An older build that refuses fields of the
// configuration, as its code predates them, runs from a copy without
// them, and logf names them, since the two builds then differ in more
// than their code.
func (e *Env) RestartCourier(ctx context.Context, binary string, logf func(string, ...any)) (*Process, error) {
	mgr, err := e.Client(e.Manager)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: CourierNamespace, Name: configv1alpha1.DefaultLeaderElectionID}
	before, err := leaseHolder(ctx, mgr, key)
	if err != nil {
		return nil, err
	}
	config := e.courierConfigPath()
	proc, err := e.respawn(ctx, CourierProcess, courierPorts, withBinary(binary, config))
	if err != nil && proc != nil {
		refused, rerr := refusedConfigFields(proc.Log)
		if rerr != nil || len(refused) == 0 {
			return nil, err
		}
		older := filepath.Join(filepath.Dir(config), "config-older.yaml")
		if err := writeConfigWithout(config, older, refused); err != nil {
			return nil, err
		}
		logf("%s predates configuration fields %s: running it without them, from %s", binary, strings.Join(refused, ", "), older)
		proc, err = e.respawn(ctx, CourierProcess, courierPorts, withBinary(binary, older))
	}
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !proc.alive() {
			return false, fmt.Errorf("%s exited; see %s", proc.Name, proc.Log)
		}
		holder, err := leaseHolder(ctx, mgr, key)
		return holder != "" && holder != before, err
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %s to hold Lease %s (log: %s): %w", proc.Name, key, proc.Log, err)
	}
	return proc, nil
}

// strictDecoding is how a Courier that exits on its configuration names
// each field it does not know, in its last line.
var (
	strictDecoding = regexp.MustCompile(`strict decoding error: (.*)$`)
	unknownField   = regexp.MustCompile(`unknown field "([^"]+)"`)
)

// refusedConfigFields reads the fields of its configuration that the
// process logging to path refused in its last line, none if that line is
// not a strict decoding error.
func refusedConfigFields(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	// The last line is all that is needed, and the log of a long run can
	// be large: read its end only.
	const tail = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	m := strictDecoding.FindSubmatch(lines[len(lines)-1])
	if m == nil {
		return nil, nil
	}
	var fields []string
	for _, f := range unknownField.FindAllSubmatch(m[1], -1) {
		fields = append(fields, string(f[1]))
	}
	return fields, nil
}

// writeConfigWithout writes the configuration file from to to, less each
// dotted field path.
func writeConfigWithout(from, to string, fields []string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading Courier's configuration: %w", err)
	}
	out, err := configWithout(data, fields)
	if err != nil {
		return fmt.Errorf("trimming %s: %w", from, err)
	}
	if err := os.WriteFile(to, out, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	return nil
}

// configWithout is a YAML document less each dotted field path, each of
// which must name a field of nested objects.
func configWithout(data []byte, fields []string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	for _, field := range fields {
		path := strings.Split(field, ".")
		obj := doc
		for _, name := range path[:len(path)-1] {
			next, ok := obj[name].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("field %q is not within objects only", field)
			}
			obj = next
		}
		if _, ok := obj[path[len(path)-1]]; !ok {
			return nil, fmt.Errorf("field %q is not set", field)
		}
		delete(obj, path[len(path)-1])
	}
	return yaml.Marshal(doc)
}

// leaseHolder is the identity holding the Lease key, "" when none does.
func leaseHolder(ctx context.Context, c client.Client, key client.ObjectKey) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, key, lease); err != nil {
		return "", fmt.Errorf("reading Lease %s: %w", key, err)
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// courierPorts reads the health and webhook ports from the configuration
// file a Courier command line names.
func courierPorts(args []string) (ports, error) {
	return configPorts("Courier", args, "bindAddress")
}
