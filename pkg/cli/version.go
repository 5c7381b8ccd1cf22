package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/courierdev/courier/pkg/version"
)

// VersionReport is what kubectl courier version shows: the plugin's own
// build. Courier's build is on its metrics (courier_build_info) and in
// its image tag.
type VersionReport struct {
	Client version.Info `json:"clientVersion"`
}

func (r *VersionReport) table(w io.Writer, _ time.Time) {
	fmt.Fprintf(w, "kubectl-courier %s\n", r.Client)
}

func (o *options) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "The plugin's version, git revision and Go version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			return printReport(o.streams.Out, o.output, &VersionReport{Client: version.Get()}, o.now())
		},
	}
}
