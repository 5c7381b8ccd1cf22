// Command kubectl-courier is a kubectl plugin: installed on the PATH, it
// runs as `kubectl courier` and shows, from the manager cluster, where
// Courier dispatched a job and why a job waits. See docs/kubectl-courier.md.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/courierdev/courier/pkg/cli"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kubectl courier: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	return cmd.Execute()
}
