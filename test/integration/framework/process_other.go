//go:build !linux

package framework

import "syscall"

func childAttributes() *syscall.SysProcAttr { return nil }
