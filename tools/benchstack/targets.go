package benchstack

import (
	"fmt"

	"github.com/courierdev/courier/tools/benchreport"
)

// The placement targets of issue 11.
const (
	// maxShare is the largest share of the jobs one of two identical
	// workers may get.
	maxShare = 0.60
	// maxRequestsPerWorkload and maxWritesPerWorkload bound Courier's
	// requests to the workers, on average, with BestFit and fanOut 1.
	maxRequestsPerWorkload = 4.0
	maxWritesPerWorkload   = 3.0
)

// evaluate checks the targets on a run.
func evaluate(res *Result) []benchreport.Verdict {
	p, r := res.Placement, res.Requests.PerWorkload
	return []benchreport.Verdict{
		benchreport.Check(len(p.OnTwoWorkers) == 0 && len(p.NeverStarted) == 0,
			"every job ran on exactly one worker",
			fmt.Sprintf("%d on two workers, %d never started", len(p.OnTwoWorkers), len(p.NeverStarted))),
		benchreport.Check(p.MaxShare <= maxShare,
			fmt.Sprintf("with %d identical workers and %d jobs, neither gets more than %.0f%%", len(res.Workers), res.Jobs, 100*maxShare),
			fmt.Sprintf("%s got %.1f%% (%d of %d)", p.MaxShareWorker, 100*p.MaxShare, p.PerWorker[p.MaxShareWorker], res.Jobs)),
		benchreport.Check(r.Total <= maxRequestsPerWorkload && r.Writes <= maxWritesPerWorkload,
			fmt.Sprintf("≤ %.0f requests to workers per workload on average, ≤ %.0f of them writes", maxRequestsPerWorkload, maxWritesPerWorkload),
			fmt.Sprintf("%.2f per workload, %.2f of them writes (%.2f gets; lists, watches and probes apart)", r.Total, r.Writes, r.Reads)),
	}
}
