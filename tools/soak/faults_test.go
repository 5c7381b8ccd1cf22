package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// A copy a fault picked can finish before the fault reaches its Workload:
// the fault must pick another rather than fail.
func TestOnLiveCopyPicksAnotherWhenThePickedOneWent(t *testing.T) {
	r := newRecorder()
	for _, name := range []string{"soak-x-0001", "soak-x-0002"} {
		r.expect(JobSpec{Name: name, Kind: BatchJob, RunFor: time.Minute})
		r.update(name, func(j *Job) {
			j.Copies = []*Copy{{Worker: "w1", UID: types.UID(name), Created: at(1), Started: at(2)}}
		})
	}
	in := &injector{rec: r}
	var tried []types.UID
	out, err := in.onLiveCopy(context.Background(), "w1", func(j *Job, cp *Copy) (string, error) {
		tried = append(tried, cp.UID)
		if len(tried) == 1 {
			return "", fmt.Errorf("deactivating the Workload of %s: %w", j.Name, errCopyGone)
		}
		return "evicted " + j.Name, nil
	})
	if err != nil {
		t.Fatalf("onLiveCopy: %v", err)
	}
	if len(tried) != 2 || tried[0] == tried[1] {
		t.Fatalf("the fault ran on %v, want two different copies", tried)
	}
	if diff := cmp.Diff("evicted "+string(tried[1]), out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// A fault that needs a copy's worker to answer must not pick one on a
// worker another fault holds (its API server paused, its link cut), and
// must hold the worker it picks.
func TestLiveCopyOnFreeWorker(t *testing.T) {
	r := newRecorder()
	for i, w := range []string{"w1", "w2"} {
		name := fmt.Sprintf("soak-x-%04d", i+1)
		r.expect(JobSpec{Name: name, Kind: TrainJob, RunFor: time.Minute})
		r.update(name, func(j *Job) {
			j.Copies = []*Copy{{Worker: w, UID: types.UID(w), Created: at(1), Started: at(2)}}
		})
	}
	locks := map[string]*sync.Mutex{"w1": {}, "w2": {}}
	locks["w1"].Lock() // A pause of w1's API server.
	_, cp, err := (&injector{rec: r}).liveCopy(context.Background(), "", onFreeWorker(locks))
	if err != nil {
		t.Fatalf("liveCopy: %v", err)
	}
	if diff := cmp.Diff("w2", cp.Worker); diff != "" {
		t.Errorf("picked worker (-want +got):\n%s", diff)
	}
	if locks["w2"].TryLock() {
		t.Errorf("w2 is free after the fault picked its copy, want it held")
	}
}

func TestOnLiveCopyReturnsOtherErrors(t *testing.T) {
	r := newRecorder()
	r.expect(JobSpec{Name: "soak-x-0001", Kind: BatchJob, RunFor: time.Minute})
	r.update("soak-x-0001", func(j *Job) {
		j.Copies = []*Copy{{Worker: "w1", UID: "a", Created: at(1), Started: at(2)}}
	})
	refused := errors.New("refused")
	calls := 0
	_, err := (&injector{rec: r}).onLiveCopy(context.Background(), "w1", func(*Job, *Copy) (string, error) {
		calls++
		return "", refused
	})
	if !errors.Is(err, refused) || calls != 1 {
		t.Errorf("onLiveCopy = %v after %d calls, want %v after one", err, calls, refused)
	}
}

// A fault that reads the manager while manager-apiserver-kill restarts its
// API server must wait for it, not fail, on a refused connection.
func TestServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, refused := http.Get("http://" + addr + "/apis")
	if refused == nil {
		t.Fatal("a get from a closed port went through")
	}
	gr := schema.GroupResource{Group: "courier.dev", Resource: "workerclusters"}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"connection refused": {err: refused, want: true},
		"refused, after a reset, as client-go says it": {
			err: fmt.Errorf("%w - error from a previous attempt: %w", refused, syscall.ECONNRESET), want: true},
		"unavailable": {err: apierrors.NewServiceUnavailable("starting"), want: true},
		"not found":   {err: apierrors.NewNotFound(gr, "worker-2")},
		"forbidden":   {err: apierrors.NewForbidden(gr, "worker-2", errors.New("no"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, serverDown(tc.err)); diff != "" {
				t.Errorf("serverDown(%v) (-want +got):\n%s", tc.err, diff)
			}
		})
	}
}
