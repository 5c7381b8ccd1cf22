package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process has to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// process is one child process, stopped by its PID.
type process struct {
	name    string
	path    string
	args    []string
	logPath string
	// ownGroup starts it in a process group of its own.
	ownGroup bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// exitErr is how the last run ended; set before its done closes.
	exitErr error
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running with PID %d", p.name, p.cmd.Process.Pid)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttributes()
	if p.ownGroup {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		p.exitErr = err
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// pid is the running process's PID, or 0.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// exited reports whether a started process has ended on its own.
func (p *process) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the running process.
func (p *process) signal(sig syscall.Signal) error {
	pid := p.pid()
	if pid == 0 {
		return fmt.Errorf("%s is not running", p.name)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling %s (PID %d): %w", p.name, pid, err)
	}
	return nil
}

// stop sends SIGTERM to the PID, then SIGKILL after stopGrace, and waits
// for the process to be reaped. Stopping a stopped process does nothing.
func (p *process) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	pid, done := p.cmd.Process.Pid, p.done
	p.cmd, p.done = nil, nil
	// SIGCONT first, in case the process was paused.
	_ = syscall.Kill(pid, syscall.SIGCONT)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("terminating %s (PID %d): %w", p.name, pid, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopGrace):
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (PID %d): %w", p.name, pid, err)
	}
	<-done
	return nil
}
