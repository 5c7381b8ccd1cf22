package benchstack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"
)

func TestCDFAndCumulative(t *testing.T) {
	cases := map[string]struct {
		samples  []float64
		wantCDF  plotter.XYs
		wantCumu plotter.XYs
	}{
		"four samples": {
			samples:  []float64{0.5, 1, 2.5, 3},
			wantCDF:  plotter.XYs{{X: 0.5, Y: 0.25}, {X: 1, Y: 0.5}, {X: 2.5, Y: 0.75}, {X: 3, Y: 1}},
			wantCumu: plotter.XYs{{X: 0, Y: 0}, {X: 0.5, Y: 1}, {X: 1, Y: 2}, {X: 2.5, Y: 3}, {X: 3, Y: 4}},
		},
		"none": {wantCDF: plotter.XYs{}, wantCumu: plotter.XYs{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantCDF, cdf(tc.samples)); diff != "" {
				t.Errorf("cdf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCumu, cumulative(tc.samples)); diff != "" {
				t.Errorf("cumulative (-want +got):\n%s", diff)
			}
		})
	}
}
