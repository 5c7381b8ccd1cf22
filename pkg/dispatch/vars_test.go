package dispatch

import (
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuetesting "github.com/courierdev/courier/pkg/testing/kueue"
)

const check = "courier"

var (
	t0  = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

const readyMsg = `Dispatched to worker "a", whose Kueue admitted the workload.`

// requeueSoon is when a pass looks again at state about to change.
const requeueSoon = time.Second

// findCheck returns the state of the named admission check, or nil.
func findCheck(wl *kueue.Workload, name kueue.AdmissionCheckReference) *kueue.AdmissionCheckState {
	for i := range wl.Status.AdmissionChecks {
		if wl.Status.AdmissionChecks[i].Name == name {
			return &wl.Status.AdmissionChecks[i]
		}
	}
	return nil
}

// local is a manager Workload with quota reserved.
func local() *kueuetesting.WorkloadWrapper {
	return kueuetesting.MakeWorkload("wl", "ns").UID("uid").ReserveQuota("cq")
}
