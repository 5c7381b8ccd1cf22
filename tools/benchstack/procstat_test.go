package benchstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseStatCPU(t *testing.T) {
	cases := map[string]struct {
		stat    string
		want    float64
		wantErr bool
	}{
		"utime and stime": {
			stat: "1234 (kueue) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 2000",
			want: 3,
		},
		"a command name with spaces and parentheses": {
			stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1",
			want: 0.03,
		},
		"cut short": {stat: "7 (x) R 1 2", wantErr: true},
		"no name":   {stat: "garbage", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.stat))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CPU seconds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseStatusAndMachine(t *testing.T) {
	cases := map[string]struct {
		status  string
		machine string
		wantRSS uint64
		want    machineTimes
	}{
		"RSS and busy time": {
			status:  "Name:\tkueue\nVmHWM:\t  900 kB\nVmRSS:\t  812 kB\n",
			machine: "cpu  100 0 50 800 50 0 0 20 7 0\ncpu0 1 2 3\n",
			wantRSS: 812,
			want:    machineTimes{Busy: 1.7, Total: 10.2, Steal: 0.2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rss, err := parseStatusKiB([]byte(tc.status), "VmRSS")
			if err != nil {
				t.Fatal(err)
			}
			times, err := parseMachineCPU([]byte(tc.machine))
			if err != nil {
				t.Fatal(err)
			}
			if rss != tc.wantRSS {
				t.Errorf("rss = %d, want %d", rss, tc.wantRSS)
			}
			if diff := cmp.Diff(tc.want, times, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("machine times (-want +got):\n%s", diff)
			}
		})
	}
}
