package framework

import "syscall"

// childAttributes makes the kernel kill a child when the test binary dies,
// even by SIGKILL, so no etcd or kube-apiserver outlives its test.
func childAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
