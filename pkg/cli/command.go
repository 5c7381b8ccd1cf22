// Package cli implements kubectl courier, a kubectl plugin that answers
// "where is my job and why is it waiting" from the manager cluster: the
// job's placement, Courier's admission check, its worker's connection,
// the job's status Courier mirrors from there, and the events (status),
// the WorkerClusters (clusters), and each worker's part in a waiting
// job's placement (explain). It reads only objects on the manager, what
// Courier records there: never the workers, so never their credentials.
package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/courierdev/courier/pkg/controllermanager"
)

// requestTimeout bounds every request to the manager, so that a manager
// out of reach costs seconds, not a hung command.
const requestTimeout = 10 * time.Second

// options are the flags every command shares.
type options struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// out is how the command prints: -o, --no-headers, -A.
	out output
	// events is how many events status shows.
	events int
	// now is the clock, for ages in tables.
	now func() time.Time
}

// NewCommand returns the kubectl-courier command with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{
		config:  genericclioptions.NewConfigFlags(true),
		streams: streams,
		now:     time.Now,
	}
	root := &cobra.Command{
		Use:           "kubectl-courier",
		Short:         "Where Courier dispatched a job, and why it waits",
		Long:          "kubectl courier reads, on the manager cluster, what Courier records about jobs and worker clusters; it never reaches the workers. See docs/kubectl-courier.md.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Help and usage name the command as kubectl users type it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl courier"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&o.out.format, "output", "o", outputHuman,
		"Output format: wide, name, json, yaml, jsonpath=..., jsonpath-file=..., go-template=..., go-template-file=...; empty is the view for people.")
	root.PersistentFlags().BoolVar(&o.out.noHeaders, "no-headers", false, "Print tables without their header row.")
	root.PersistentFlags().BoolVarP(&o.out.allNamespaces, "all-namespaces", "A", false, "List the jobs of every namespace (status without a job).")
	root.AddCommand(o.statusCommand(), o.clustersCommand(), o.explainCommand(), o.versionCommand())
	return root
}

func (o *options) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [[TYPE/]NAME]",
		Short: "Where a job runs: its worker and its connection, Courier's check, the job's mirrored status and the last events; without a job, where each job is",
		Example: `  kubectl courier status my-trainjob
  kubectl courier status job.batch/my-job -n team-a -o yaml
  kubectl courier status -A -o wide`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return o.run(cmd.Context(), func(ctx context.Context, c *clients) (report, error) {
					return gatherJobs(ctx, c, o.out.allNamespaces)
				})
			}
			if err := oneNamespace(o.out); err != nil {
				return err
			}
			return o.run(cmd.Context(), func(ctx context.Context, c *clients) (report, error) {
				return gatherStatus(ctx, c, args[0], o.events)
			})
		},
	}
	cmd.Flags().IntVar(&o.events, "events", 5, "How many of the last events to show.")
	return cmd
}

func (o *options) clustersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "clusters",
		Short: "The WorkerClusters: connection, capacity and the jobs placed on or nominated for each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// WorkerClusters have no namespace: -A changes nothing.
			o.out.allNamespaces = false
			return o.run(cmd.Context(), gatherClusters)
		},
	}
}

func (o *options) explainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "explain [TYPE/]NAME",
		Short: "Why a job waits: Courier's check, its DispatchPolicy, and each worker and why it was passed over",
		Example: `  kubectl courier explain my-trainjob
  kubectl courier explain job.batch/my-job -n team-a -o json`,
		Args: exactlyOneJob,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := oneNamespace(o.out); err != nil {
				return err
			}
			return o.run(cmd.Context(), func(ctx context.Context, c *clients) (report, error) {
				return gatherExplain(ctx, c, args[0])
			})
		},
	}
}

func exactlyOneJob(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("name one job, as NAME (a TrainJob) or TYPE/NAME (job.batch/NAME); got %d arguments", len(args))
	}
	return nil
}

// oneNamespace refuses -A for a named job, which is in one namespace.
func oneNamespace(out output) error {
	if out.allNamespaces {
		return fmt.Errorf("a job is named in one namespace: pick it with -n; -A lists every job, with kubectl courier status -A")
	}
	return nil
}

// run checks the output format, connects to the manager, gathers a
// report and prints it.
func (o *options) run(ctx context.Context, gather func(context.Context, *clients) (report, error)) error {
	if err := o.out.check(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := o.clients()
	if err != nil {
		return err
	}
	r, err := gather(ctx, c)
	if err != nil {
		return err
	}
	o.out.now = o.now()
	return o.out.print(o.streams.Out, r)
}

// clients are what the commands read with.
type clients struct {
	manager client.Client
	mapper  meta.RESTMapper
	// namespace is the one of -n, or the kubeconfig context's.
	namespace string
	now       time.Time
}

func (o *options) clients() (*clients, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the manager's kubeconfig: %w", err)
	}
	cfg.Timeout = requestTimeout
	cfg.UserAgent = "kubectl-courier"
	mapper, err := o.config.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("discovering the manager's API: %w", err)
	}
	manager, err := client.New(cfg, client.Options{Scheme: controllermanager.NewScheme(), Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("creating the manager's client: %w", err)
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return &clients{manager: manager, mapper: mapper, namespace: ns, now: o.now()}, nil
}
