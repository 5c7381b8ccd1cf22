package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a long-running process Up started, recorded in the state file.
type Process struct {
	Name string   `json:"name"`
	PID  int      `json:"pid"`
	Args []string `json:"args"`
	// Env are the variables added to the environment, for a restart.
	Env []string `json:"env,omitempty"`
	Log string   `json:"log"`
}

// ConfigFile is the configuration file the process's command line names
// with --config, or "" when it names none.
func (p *Process) ConfigFile() string {
	return configFlag(p.Args)
}

// configFlag is the value of the last --config in a command line, as the
// flag package reads it, or "" when there is none.
func configFlag(args []string) string {
	var path string
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			path = args[i+1]
		}
	}
	return path
}

// startProcess starts a detached process that outlives the command that
// started it, with its output in logPath, emptied first so that collected
// logs never mix an earlier environment's lines in.
func startProcess(name, logPath string, env []string, args ...string) (*Process, error) {
	return spawn(name, logPath, os.O_TRUNC, env, args...)
}

// spawn starts the process with its log opened with the extra flag:
// O_TRUNC for a new process, O_APPEND for one restarted.
func spawn(name, logPath string, logFlag int, env []string, args ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|logFlag|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	// A session of its own: the process is not killed with the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, Args: args, Env: env, Log: logPath}
	// Reap it if it dies while we still run, so that alive() sees the exit.
	go func() { _ = cmd.Wait() }()
	return p, nil
}

// alive reports whether the process still runs.
func (p *Process) alive() bool {
	return syscall.Kill(p.PID, 0) == nil && !isZombie(p.PID)
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == ')' {
			return i+2 < len(data) && data[i+2] == 'Z'
		}
	}
	return false
}

// stop sends SIGTERM to the PID, then SIGKILL after grace.
func (p *Process) stop(grace time.Duration) error {
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("terminating %s (PID %d): %w", p.Name, p.PID, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.alive() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (PID %d): %w", p.Name, p.PID, err)
	}
	return nil
}
