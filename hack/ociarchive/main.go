// Command ociarchive turns the archive `docker save` writes into an OCI
// image layout archive (oci-layout, index.json, blobs/sha256/...), for an
// image built offline by an engine older than Docker 25, whose save
// writes only Docker's own format. An archive already in OCI layout is
// copied as it is. hack/release.sh runs it on the controller image.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "ociarchive: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	in := flag.String("in", "", "The archive docker save wrote.")
	out := flag.String("out", "", "The OCI archive to write.")
	name := flag.String("name", "", "The image's full name, such as registry.example.com/courier:v0.1.0, for the index's annotations.")
	flag.Parse()
	if *in == "" || *out == "" || *name == "" {
		return fmt.Errorf("--in, --out and --name are required")
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return fmt.Errorf("reading the docker archive: %w", err)
	}
	oci, err := convert(data, *name)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, oci, 0o644); err != nil {
		return fmt.Errorf("writing the OCI archive: %w", err)
	}
	return nil
}
