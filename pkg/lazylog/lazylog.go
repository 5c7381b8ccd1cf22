// Package lazylog defers a logger's WithValues until it writes an entry.
//
// controller-runtime gives every reconcile a logger with the controller,
// the object and a reconcile ID, and zap encodes those values as soon as
// they are added. Courier writes nothing in most passes at its default
// verbosity, so that encoding would be work for nothing. A Sink keeps the
// values and hands them to the logger it wraps only when an entry is
// written.
package lazylog

import (
	"slices"

	"github.com/go-logr/logr"
)

// New returns a logger that writes through base, adding the values given
// to it and to the loggers derived from it only to the entries written.
func New(base logr.Logger) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	if d, ok := sink.(logr.CallDepthLogSink); ok {
		// Entries pass through one more frame, Sink's.
		sink = d.WithCallDepth(1)
	}
	return logr.New(&Sink{base: sink})
}

// Sink is a logr.LogSink that keeps the values given to WithValues and
// adds them to the sink it wraps when an entry is written.
type Sink struct {
	base logr.LogSink
	// values are the key/value pairs not yet added to base, in order.
	values []any
}

var (
	_ logr.LogSink          = &Sink{}
	_ logr.CallDepthLogSink = &Sink{}
)

// Init implements logr.LogSink. base was initialised with its own logger.
func (s *Sink) Init(logr.RuntimeInfo) {}

// Enabled implements logr.LogSink.
func (s *Sink) Enabled(level int) bool { return s.base.Enabled(level) }

// Info implements logr.LogSink.
func (s *Sink) Info(level int, msg string, keysAndValues ...any) {
	s.resolved().Info(level, msg, keysAndValues...)
}

// Error implements logr.LogSink.
func (s *Sink) Error(err error, msg string, keysAndValues ...any) {
	s.resolved().Error(err, msg, keysAndValues...)
}

// WithValues implements logr.LogSink, keeping the values for later.
func (s *Sink) WithValues(keysAndValues ...any) logr.LogSink {
	// Clip, so that two loggers derived from s never share an append.
	return &Sink{base: s.base, values: append(slices.Clip(s.values), keysAndValues...)}
}

// WithName implements logr.LogSink. A name and values are independent in
// an entry, so the name goes to base at once.
func (s *Sink) WithName(name string) logr.LogSink {
	return &Sink{base: s.base.WithName(name), values: s.values}
}

// WithCallDepth implements logr.CallDepthLogSink.
func (s *Sink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.base.(logr.CallDepthLogSink); ok {
		return &Sink{base: d.WithCallDepth(depth), values: s.values}
	}
	return s
}

// resolved is base with the values kept.
func (s *Sink) resolved() logr.LogSink {
	if len(s.values) == 0 {
		return s.base
	}
	return s.base.WithValues(s.values...)
}
