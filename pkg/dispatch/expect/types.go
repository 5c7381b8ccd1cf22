package expect

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/courierdev/courier/pkg/placement"
)

// CopyKey names one copy Courier creates: on a worker, of a kind, for a
// manager Workload.
type CopyKey struct {
	Cluster, Kind string
	Workload      types.UID
}

// Created is a copy Courier created: its UID and the resourceVersion its
// create returned.
type Created struct {
	UID     types.UID
	Version string
	At      time.Time
}

// Demand is what a Workload copy asks of its worker's quota: its pod sets,
// from one LocalQueue (namespace/name); only copies to the same LocalQueue
// draw from the same ClusterQueue for sure.
type Demand struct {
	Queue   string
	PodSets []placement.PodSet
}

// Note says why a worker is passed over, in a few words, and until when.
type Note struct {
	Reason string
	Until  time.Time
}

// NamespaceKey names a worker and a namespace.
type NamespaceKey struct{ Cluster, Namespace string }

// RemnantKey names a deleted job copy: its worker, namespace and name.
type RemnantKey struct{ Cluster, Namespace, Name string }

// Remnant is what ran a deleted job copy's pods: the dependent that runs
// them (a TrainJob's JobSet), of its kind, controlled by the copy of UID
// Owner; and the pods, by the label PodLabel that carries the copy's name.
// Either may be unset.
type Remnant struct {
	Owner    types.UID
	Runner   schema.GroupVersionKind
	PodLabel string
}

// RemnantNote is a remnant under its key.
type RemnantNote struct {
	Key     RemnantKey
	Remnant Remnant
}

// Assumption names a Workload copy assumed on a worker.
type Assumption struct {
	Cluster  string
	Workload types.UID
}

// Rounds starts Workload's rounds at At, or ends them if End.
type Rounds struct {
	Workload types.UID
	At       time.Time
	End      bool
}
