package placement

import (
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// PodRequests is what one pod asks for, in milli-units, as Kubernetes
// counts it: the containers' requests summed, or the largest init
// container's if larger; sidecars (init containers that keep running) add
// to both; the pod overhead on top. A limit stands in for a missing
// request, as the API server defaults it.
func PodRequests(spec *corev1.PodSpec) map[corev1.ResourceName]int64 {
	running := map[corev1.ResourceName]int64{}
	for i := range spec.Containers {
		addMilli(running, containerRequests(&spec.Containers[i]))
	}
	sidecars := map[corev1.ResourceName]int64{}
	initPeak := map[corev1.ResourceName]int64{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		step := map[corev1.ResourceName]int64{}
		if ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways {
			addMilli(running, containerRequests(c))
			addMilli(sidecars, containerRequests(c))
			addMilli(step, sidecars)
		} else {
			addMilli(step, containerRequests(c))
			addMilli(step, sidecars)
		}
		for res, v := range step {
			initPeak[res] = max(initPeak[res], v)
		}
	}
	for res, v := range initPeak {
		running[res] = max(running[res], v)
	}
	for res, q := range spec.Overhead {
		running[res] += q.MilliValue()
	}
	return running
}

func containerRequests(c *corev1.Container) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(c.Resources.Requests)+len(c.Resources.Limits))
	for res, q := range c.Resources.Limits {
		out[res] = q.MilliValue()
	}
	for res, q := range c.Resources.Requests {
		out[res] = q.MilliValue()
	}
	return out
}

func addMilli(to, from map[corev1.ResourceName]int64) {
	for res, v := range from {
		to[res] += v
	}
}

// Quantity turns milli-units back into a Quantity written as people
// write that resource: bytes in binary units.
func Quantity(res corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if bytesLike(res) {
		format = resource.BinarySI
	}
	if milli%1000 == 0 {
		return *resource.NewQuantity(milli/1000, format)
	}
	return *resource.NewMilliQuantity(milli, format)
}

// Human formats milli-units for people: bytes as a binary quantity
// ("16Gi"), anything else as a plain number ("8", "0.5").
func Human(res corev1.ResourceName, milli int64) string {
	if bytesLike(res) {
		q := Quantity(res, milli)
		return q.String()
	}
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64)
}

func bytesLike(res corev1.ResourceName) bool {
	return res == corev1.ResourceMemory || res == corev1.ResourceEphemeralStorage || res == corev1.ResourceStorage ||
		strings.HasPrefix(string(res), corev1.ResourceHugePagesPrefix)
}

// WithPending returns a copy of c with the demand of pod sets added to its
// pending demand, each resource to the first flavor that lists it, as the
// capacity snapshots count Courier's waiting copies. Unknown capacity is
// returned as it is.
func (c Capacity) WithPending(podSets []PodSet) Capacity {
	if !c.Known || len(podSets) == 0 {
		return c
	}
	out := c
	out.Flavors = make([]Flavor, len(c.Flavors))
	for i, f := range c.Flavors {
		out.Flavors[i] = Flavor{Name: f.Name, Resources: maps.Clone(f.Resources)}
	}
	for _, ps := range podSets {
		for res, per := range ps.Requests {
			for i := range out.Flavors {
				if q, ok := out.Flavors[i].Resources[res]; ok {
					q.Pending = satAdd(q.Pending, satMul(per, int64(ps.Count)))
					out.Flavors[i].Resources[res] = q
					break
				}
			}
		}
	}
	return out
}
