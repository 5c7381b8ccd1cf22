// Package webhook serves Courier's admission webhooks on the manager:
//
//   - /mutate-job defaults a new job's managedBy field to Courier's value when
//     its LocalQueue feeds a ClusterQueue with a Courier AdmissionCheck, so
//     that users need not type it and the manager's own controllers leave the
//     job alone;
//   - /validate-trainjob refuses, at submission, TrainJob RuntimePatches that
//     a worker's Trainer would refuse after Kueue reserved quota;
//   - /validate-dispatchpolicy compiles a DispatchPolicy's CEL.
//
// The paths, names and selectors are the contract with config/webhook and
// the chart.
package webhook
