package soak

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPlotTimeline(t *testing.T) {
	cases := map[string]struct {
		report *Report
	}{
		"jobs, copies and faults": {report: &Report{
			Began: at(0), Ended: at(120),
			Jobs: []Job{
				{JobSpec: JobSpec{Name: "a"}, Submitted: at(1), Finished: at(30),
					Copies: []*Copy{{Worker: "w1", Created: at(2), Started: at(3), Ended: at(29), Deleted: at(31)}}},
				{JobSpec: JobSpec{Name: "b"}, Submitted: at(5), Finished: at(90), Copies: []*Copy{
					{Worker: "w2", Created: at(6), Started: at(7), Deleted: at(50)},
					{Worker: "w1", Created: at(52), Started: at(53), Ended: at(89)},
				}},
				{JobSpec: JobSpec{Name: "refused"}, Refused: "forbidden"},
			},
			Faults: []*Fault{{Planned: Planned{Kind: RemoteDelete, Target: "w2"}, Started: at(50), Restored: at(50)}},
		}},
		"nothing submitted": {report: &Report{Began: at(0), Ended: at(10)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "timeline.png")
			if err := plotTimeline(tc.report, path); err != nil {
				t.Fatalf("plotTimeline: %v", err)
			}
			info, err := os.Stat(path)
			if err != nil || info.Size() == 0 {
				t.Fatalf("no timeline written: %v", err)
			}
		})
	}
}
