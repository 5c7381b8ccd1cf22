package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// State is what Up started, saved in <dir>/state.json.
type State struct {
	// Clusters are the kwokctl cluster names, manager first.
	Clusters []string `json:"clusters"`
	// Processes are the processes Up started besides kwokctl's own.
	Processes []*Process `json:"processes"`
	// CourierMetrics is the loopback host:port where Courier serves its
	// Prometheus metrics, at /metrics over plain HTTP; empty until Courier
	// is started. Benchmarks read it (courier-bench stack).
	CourierMetrics string `json:"courierMetrics,omitempty"`
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// LoadState reads the state of the environment in dir; a missing file is an
// empty state.
func LoadState(dir string) (*State, error) {
	data, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", statePath(dir), err)
	}
	return s, nil
}

func (s *State) save(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	if err := os.WriteFile(statePath(dir), data, 0o600); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	return nil
}

// recordCourierMetrics saves where Courier serves its metrics.
func (e *Env) recordCourierMetrics(addr string) error {
	state, err := LoadState(e.Dir)
	if err != nil {
		return err
	}
	state.CourierMetrics = addr
	return state.save(e.Dir)
}

// CourierMetricsURL returns the URL of the Prometheus metrics of the
// environment's Courier.
func (e *Env) CourierMetricsURL() (string, error) {
	state, err := LoadState(e.Dir)
	if err != nil {
		return "", err
	}
	if state.CourierMetrics == "" {
		return "", fmt.Errorf("no metrics address of Courier in %s; was Courier started?", statePath(e.Dir))
	}
	return "http://" + state.CourierMetrics + "/metrics", nil
}
