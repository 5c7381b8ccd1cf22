package lazylog

import (
	"errors"
	"io"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// record is a funcr logger at verbosity 2 that appends each entry, with
// its caller, to lines.
func record(lines *[]string) logr.Logger {
	return funcr.New(func(prefix, args string) { *lines = append(*lines, prefix+" "+args) },
		funcr.Options{Verbosity: 2, LogCaller: funcr.All})
}

func TestEntriesAreThoseOfTheLoggerWrapped(t *testing.T) {
	cases := map[string]func(l logr.Logger){
		"values, then an entry": func(l logr.Logger) {
			l.WithValues("controller", "dispatch", "reconcileID", "a1").Info("Planned dispatch", "create", 2)
		},
		"names and values interleaved": func(l logr.Logger) {
			l.WithName("dispatch").WithValues("a", 1).WithName("gc").WithValues("b", 2).Info("Collecting")
		},
		"an error": func(l logr.Logger) {
			l.WithValues("worker", "w1").Error(errors.New("refused"), "Listing copies", "kind", "TrainJob")
		},
		"verbosity: written up to 2, not above": func(l logr.Logger) {
			v := l.WithValues("k", "v")
			v.V(2).Info("Written")
			v.V(4).Info("Not written")
		},
		"two loggers from one keep their own values": func(l logr.Logger) {
			base := l.WithValues("shared", 0)
			one, two := base.WithValues("one", 1), base.WithValues("two", 2)
			two.Info("Second")
			one.Info("First")
		},
		"a helper's frame skipped": func(l logr.Logger) {
			l.WithCallDepth(0).WithValues("k", "v").Info("Direct")
		},
	}
	for name, log := range cases {
		t.Run(name, func(t *testing.T) {
			var eager, lazy []string
			log(record(&eager))
			log(New(record(&lazy)))
			if len(eager) == 0 {
				t.Fatal("the case writes nothing")
			}
			if diff := cmp.Diff(eager, lazy); diff != "" {
				t.Errorf("entries (-wrapped alone +lazily):\n%s", diff)
			}
		})
	}
}

// counting counts the WithValues calls that reach the sink it wraps.
type counting struct {
	logr.LogSink
	calls *int
}

func (c counting) WithValues(kv ...any) logr.LogSink {
	*c.calls++
	return counting{c.LogSink.WithValues(kv...), c.calls}
}

func TestValuesReachTheSinkOnlyWhenAnEntryIsWritten(t *testing.T) {
	var lines []string
	calls := 0
	base := record(&lines)
	l := New(base.WithSink(counting{base.GetSink(), &calls}))
	pass := l.WithValues("controller", "dispatch").WithValues("Workload", klog.KRef("team-a", "wl"), "reconcileID", "a1")
	pass.V(4).Info("Planned dispatch")
	if calls != 0 || len(lines) != 0 {
		t.Fatalf("before any entry: %d WithValues reached the sink, %d lines; want none", calls, len(lines))
	}
	pass.Info("Dispatched")
	if calls != 1 || len(lines) != 1 {
		t.Errorf("after one entry: %d WithValues reached the sink, %d lines; want 1 and 1", calls, len(lines))
	}
}

// BenchmarkReconcileLogger measures what a reconcile's logger costs, made
// as controller-runtime makes it, when the pass writes nothing: controller-runtime's zap, as
// Courier configures it, alone and wrapped.
func BenchmarkReconcileLogger(b *testing.B) {
	eager := crzap.New(crzap.WriteTo(io.Discard))
	for name, l := range map[string]logr.Logger{"zap": eager, "lazylog over zap": New(eager)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pass := l.WithValues("controller", "dispatch", "controllerGroup", "kueue.x-k8s.io", "controllerKind", "Workload").
					WithValues("Workload", klog.KRef("team-a", "trainjob-tj-1a2b3"), "namespace", "team-a", "name", "trainjob-tj-1a2b3").
					WithValues("reconcileID", "4d6f0a4e-3c1b-4b8e-9d7c-2f5e8a1b0c3d")
				pass.V(4).Info("Planned dispatch", "create", 2)
			}
		})
	}
}
