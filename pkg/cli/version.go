package cli

import (
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/courierdev/courier/pkg/version"
)

// VersionReport is what kubectl courier version shows: the plugin's own
// build. Courier's build is on its metrics (courier_build_info) and in
// its image tag.
type VersionReport struct {
	metav1.TypeMeta `json:",inline"`
	Client          version.Info `json:"clientVersion"`
}

func (o *options) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "The plugin's version, git revision and Go version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.out.check(); err != nil {
				return err
			}
			return o.out.print(o.streams.Out, &VersionReport{Client: version.Get()})
		},
	}
}
