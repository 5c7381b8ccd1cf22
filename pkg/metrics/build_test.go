package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/courierdev/courier/pkg/version"
)

func TestBuildInfo(t *testing.T) {
	g := newBuildInfo(version.Info{Version: "v0.1.0", Revision: "0123abc", GoVersion: "go1.26.8"})
	want := `# HELP courier_build_info 1, labelled with the version, git revision and Go version of the running Courier.
# TYPE courier_build_info gauge
courier_build_info{goversion="go1.26.8",revision="0123abc",version="v0.1.0"} 1
`
	if err := testutil.CollectAndCompare(g, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
