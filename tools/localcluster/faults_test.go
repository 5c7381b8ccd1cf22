package localcluster

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The soak's supervisor starts again the peers that exited, as a kubelet
// would: a Kueue restarted while its API server was slow exits at startup.
func TestPeersDown(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := exited.Process.Pid, os.Getpid()
	dir := t.TempDir()
	state := &State{Processes: []*Process{
		{Name: "worker-1/kueue", PID: live},
		{Name: "worker-1/trainer", PID: dead},
		{Name: "worker-1/courier", PID: dead},
		{Name: "worker-2/kueue", PID: dead},
		{Name: "worker-3/courier-fence", PID: dead},
	}}
	if err := state.save(dir); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cluster string
		want    []string
	}{
		"a peer exited, another runs, Courier is not a peer": {cluster: "worker-1", want: []string{"worker-1/trainer"}},
		"another cluster's Kueue exited":                     {cluster: "worker-2", want: []string{"worker-2/kueue"}},
		"a fence exited":                                     {cluster: "worker-3", want: []string{"worker-3/courier-fence"}},
		"no peer recorded":                                   {cluster: "worker-4"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PeersDown(dir, tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PeersDown (-want +got):\n%s", diff)
			}
		})
	}
}

// A killed API server leaves no PID file behind for kwokctl to take for a
// running one.
func TestKillAPIServer(t *testing.T) {
	dir := t.TempDir()
	server := exec.Command("sleep", "60")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	// A zombie answers signals until reaped: this test reaps it, as init
	// would, some time later.
	defer func() { _ = server.Wait() }()
	path := pidPath(dir, "worker-1", "kube-apiserver")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(server.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := KillAPIServer(dir, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the PID file of the killed API server: %v, want it gone", err)
	}
	if (&Process{PID: server.Process.Pid}).alive() {
		t.Error("the API server still runs")
	}
}
