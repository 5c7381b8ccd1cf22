// Command chartreadme writes charts/courier/README.md from the chart's
// values schema and values: one row per documented value, with its type,
// default and description, so that the README cannot drift from what the
// chart accepts. `make manifests` runs it; `make verify` fails if the
// README it writes differs from the tree.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "chartreadme: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	chart := flag.String("chart", "charts/courier", "Folder of the chart: values.schema.json and values.yaml in, README.md out.")
	flag.Parse()
	readme, err := render(*chart)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*chart+"/README.md", readme, 0o644); err != nil {
		return fmt.Errorf("writing the README: %w", err)
	}
	return nil
}
