package hack

import (
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTestFailures(t *testing.T) {
	const spec = `
• [FAILED] [2.138 seconds]
The managedBy webhook [It] defaults managedBy on a TrainJob queued through a Courier check
/work/main/test/integration/webhook/webhook_test.go:66
`
	cases := map[string]struct {
		maxLines string
		want     string
	}{
		"every failure, without colours, timeline or captured output": {
			maxLines: "80",
			want: "What the failed tests said (from testdata/failed-tests.log):\n" + spec + `
  [FAILED] Timed out after 2.001s.
  The function passed to Eventually failed at /work/main/test/integration/webhook/webhook_test.go:73 with:
  Expected
      <string>: The credential plugin said 42
  to contain substring
      <string>: not JSON
  In [It] at: /work/main/test/integration/webhook/webhook_test.go:73 @ 12/07/26 13:17:48.204

--- FAIL: TestWebhook (11.66s)

--- FAIL: TestGlanceCell (0.00s)
    --- FAIL: TestGlanceCell/idle (0.00s)
        compare_glance_test.go:40: glanceCell() mismatch (-want +got):
              string(
            - 	"6.4",
            + 	"6.5",
              )
`,
		},
		"cut at the lines asked for, saying how many are left": {
			maxLines: "4",
			want:     "What the failed tests said (from testdata/failed-tests.log):\n" + spec + "... and 18 more lines; the whole report is above.\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("bash", "test-failures.sh", "testdata/failed-tests.log", tc.maxLines).CombinedOutput()
			if err != nil {
				t.Fatalf("test-failures.sh: %v\n%s", err, out)
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Errorf("test-failures.sh output (-want +got):\n%s", diff)
			}
		})
	}
}
