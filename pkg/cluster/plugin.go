package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/pkg/apis/clientauthentication"
	"k8s.io/client-go/pkg/apis/clientauthentication/install"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/pkg/metrics"
)

// execCodecs encode and decode ExecCredentials in the versions plugins
// speak, as client-go's own exec authenticator does.
var execCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return serializer.NewCodecFactory(scheme)
}()

const (
	// maxPluginOutput bounds what Courier reads of a plugin's output: an
	// ExecCredential is a few kilobytes.
	maxPluginOutput = 1 << 20
	// maxPluginStderr bounds how much of a failing plugin's standard error
	// its condition quotes.
	maxPluginStderr = 512
	// pluginWaitDelay is how long Courier waits for a killed plugin's
	// output to close, should a child it started still hold it.
	pluginWaitDelay = time.Second
)

// credential is what a plugin handed out.
type credential struct {
	token     string
	expiresAt time.Time
}

// run runs the plugin once, bounded by its timeout, and returns its
// credential. A plugin that fails, runs too long or prints anything but
// an ExecCredential with a token is a CredentialPluginFailed error that
// says which, and names the plugin; the plugin's output is never quoted,
// since it may hold a token.
func (p *Plugin) run(ctx context.Context, worker string) (credential, error) {
	cred, result, err := p.exec(ctx)
	metrics.CredentialPluginRuns.WithLabelValues(worker, p.Name, result).Inc()
	if err != nil {
		return credential{}, &Error{Reason: courier.ReasonCredentialPluginFailed, err: err,
			Message: fmt.Sprintf("The credential plugin %q (%s) %s.", p.Name, p.Command, err)}
	}
	return cred, nil
}

// exec runs the plugin and reads its answer; the result is the metric's
// label: success, failed, timeout or invalid.
func (p *Plugin) exec(ctx context.Context) (credential, string, error) {
	gv, err := schema.ParseGroupVersion(p.APIVersion)
	if err != nil {
		return credential{}, "invalid", fmt.Errorf("is to speak apiVersion %q, which does not parse", p.APIVersion)
	}
	input := &clientauthentication.ExecCredential{Spec: clientauthentication.ExecCredentialSpec{Cluster: p.Cluster}}
	info, err := runtime.Encode(execCodecs.LegacyCodec(gv), input)
	if err != nil {
		return credential{}, "invalid", fmt.Errorf("could not be given KUBERNETES_EXEC_INFO: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Command, p.Args...)
	cmd.Env = append(append(os.Environ(), p.Env...), "KUBERNETES_EXEC_INFO="+string(info))
	stdout := &limitedBuffer{limit: maxPluginOutput}
	stderr := &limitedBuffer{limit: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// The plugin runs in a process group of its own, killed whole, so that
	// a hung plugin's children do not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pluginWaitDelay
	err = cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return credential{}, "timeout", fmt.Errorf("did not answer within workerCredentials.pluginTimeout (%s) and was stopped", p.Timeout)
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return credential{}, "failed", fmt.Errorf("failed with exit code %d%s", exit.ExitCode(), quoteStderr(stderr.Bytes()))
		}
		return credential{}, "failed", fmt.Errorf("could not be run: %v", err)
	case stdout.overflow:
		return credential{}, "invalid", fmt.Errorf("printed more than %d bytes, which is not an ExecCredential", maxPluginOutput)
	}
	out := &clientauthentication.ExecCredential{}
	_, got, err := execCodecs.UniversalDecoder(gv).Decode(stdout.Bytes(), nil, out)
	if err != nil {
		return credential{}, "invalid", fmt.Errorf("printed what is not an ExecCredential of %s (%s)", p.APIVersion, decodeProblem(err))
	}
	if got.GroupVersion() != gv {
		return credential{}, "invalid", fmt.Errorf("printed an ExecCredential of %s, not of %s as configured", got.GroupVersion(), p.APIVersion)
	}
	switch s := out.Status; {
	case s == nil:
		return credential{}, "invalid", errors.New("printed an ExecCredential without status")
	case s.Token == "" && s.ClientCertificateData != "":
		return credential{}, "invalid", errors.New("printed a client certificate, not a token; Courier takes tokens from plugins")
	case s.Token == "":
		return credential{}, "invalid", errors.New("printed an ExecCredential without a token")
	}
	// A plugin that hands out a bound ServiceAccount token (the cluster
	// inventory's secretreader) may not say when it expires; its exp does.
	cred := credential{token: out.Status.Token, expiresAt: tokenExpiry(out.Status.Token)}
	if t := out.Status.ExpirationTimestamp; t != nil {
		cred.expiresAt = t.Time
	}
	return cred, "success", nil
}

// decodeProblem says what was wrong with a plugin's output without
// quoting it: decoders put the bytes they could not read in their errors.
func decodeProblem(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Object 'Kind' is missing"), strings.Contains(msg, "no kind"):
		return "no kind ExecCredential"
	case strings.Contains(msg, "json"), strings.Contains(msg, "yaml"), strings.Contains(msg, "invalid character"):
		return "not JSON"
	default:
		return "it does not decode"
	}
}

// quoteStderr quotes the end of a failing plugin's standard error, where
// plugins say why they failed.
func quoteStderr(b []byte) string {
	s := strings.TrimSpace(string(bytes.ToValidUTF8(b, nil)))
	if s == "" {
		return ""
	}
	if len(s) > maxPluginStderr {
		s = "..." + s[len(s)-maxPluginStderr:]
	}
	return ": " + strings.Join(strings.Fields(s), " ")
}

// limitedBuffer keeps the first limit bytes written to it. It has no
// ReadFrom, which would let io.Copy write past the limit.
type limitedBuffer struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.overflow = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }
