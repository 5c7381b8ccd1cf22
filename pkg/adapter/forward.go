package adapter

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// Forwarding is what it takes to bring the manager's truth to a job copy:
// changes made on the manager since dispatch, and edits made to the copy
// on the worker by hand.
type Forwarding struct {
	// Update is the copy as it must become, nil when nothing can be written.
	Update *unstructured.Unstructured
	// Forwarded are the fields changed on the manager that Update carries.
	Forwarded []string
	// Restored are the fields edited on the worker that Update sets back.
	Restored []string
	// Refused are the differences Update leaves, each with the reason.
	Refused []Refusal
}

// Refusal is a difference between the manager's job and its copy that
// Courier does not write to the worker.
type Refusal struct {
	// Field is the path of the field, such as spec.parallelism.
	Field string
	// Why says why, in a sentence.
	Why string
	// Edited: the copy was edited on the worker by hand, not the job on
	// the manager.
	Edited bool
}

// Message says what was refused in one sentence per field.
func (r Refusal) Message() string { return r.Field + ": " + r.Why }

// Fields compared as wholes, besides spec's top-level fields: the labels
// and annotations the manager's owner sets.
const (
	labelsField      = "metadata.labels"
	annotationsField = "metadata.annotations"
)

// Key prefixes of the labels and annotations that the Kueues and Courier
// write on each side; they are never forwarded. The priority-class label
// is the user's way to change a job's priority, and travels.
var (
	reservedPrefixes = []string{"kueue.x-k8s.io/", "courier.dev/"}
	priorityLabel    = "kueue.x-k8s.io/priority-class"
)

func reservedKey(k string) bool {
	if k == priorityLabel {
		return false
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// view maps each compared field of a job, or of its copy, to its value as
// compared: labels and annotations without the reserved keys; the spec's
// forwarded paths; every other top-level spec field, without managedBy and
// suspend, which each side's Kueue sets, and without what Kueue writes into
// pod templates when it starts a job.
func (k *kindAdapter) view(job *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	meta := func(field string, m map[string]string) {
		kept := map[string]any{}
		for key, v := range m {
			if !reservedKey(key) {
				kept[key] = v
			}
		}
		if len(kept) > 0 {
			out[field] = kept
		}
	}
	meta(labelsField, job.GetLabels())
	meta(annotationsField, job.GetAnnotations())
	spec := nestedMapNoCopy(job.Object, "spec")
	if spec == nil {
		return out
	}
	spec = runtime.DeepCopyJSON(spec)
	delete(spec, "suspend")
	unstructured.RemoveNestedField(spec, k.managedByPath()[1:]...)
	for _, p := range k.ForwardPaths {
		path := strings.Split(p, ".")[1:]
		if v, found, _ := unstructured.NestedFieldNoCopy(spec, path...); found {
			out[p] = v
		}
		unstructured.RemoveNestedField(spec, path...)
	}
	for f, v := range spec {
		if k.fieldView != nil {
			if v = k.fieldView(f, v); v == nil {
				continue
			}
		}
		out["spec."+f] = stripStartWrites(v)
	}
	return out
}

// stripStartWrites removes, from every pod template within v, what Kueue
// writes there when it starts a job: labels, annotations, node selector,
// tolerations and scheduling gates. It modifies v.
func stripStartWrites(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if spec, ok := t["spec"].(map[string]any); ok {
			if _, pod := spec["containers"]; pod {
				if meta, ok := t["metadata"].(map[string]any); ok {
					delete(meta, "labels")
					delete(meta, "annotations")
					if len(meta) == 0 {
						delete(t, "metadata")
					}
				}
				for _, f := range []string{"nodeSelector", "tolerations", "schedulingGates"} {
					delete(spec, f)
				}
			}
		}
		for _, c := range t {
			stripStartWrites(c)
		}
	case []any:
		for _, c := range t {
			stripStartWrites(c)
		}
	}
	return v
}

// holdsPodTemplate reports whether a field's value holds a pod template,
// which Kueue on the worker writes into when it starts the job.
func holdsPodTemplate(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if spec, ok := t["spec"].(map[string]any); ok {
			if _, pod := spec["containers"]; pod {
				return true
			}
		}
		for _, c := range t {
			if holdsPodTemplate(c) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(t, holdsPodTemplate)
	}
	return false
}

// hashes fingerprints each field of a view.
func hashes(view map[string]any) map[string]string {
	out := make(map[string]string, len(view))
	for f, v := range view {
		out[f] = fingerprint(v)
	}
	return out
}

func fingerprint(v any) string {
	if v == nil {
		return ""
	}
	data, err := json.Marshal(v) // Map keys are sorted: equal values, equal bytes.
	if err != nil {
		return "unencodable"
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

// stampHashes records on a copy the fingerprint of each compared field as
// Courier writes it.
func stampHashes(copy *unstructured.Unstructured, h map[string]string) error {
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encoding spec hashes: %w", err)
	}
	annotations := copy.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[courier.SpecHashesAnnotation] = string(data)
	copy.SetAnnotations(annotations)
	return nil
}

// sentHashes reads the fingerprints recorded on a copy; nil for a copy
// made before Courier recorded them, or whose record was damaged.
func sentHashes(copy *unstructured.Unstructured) map[string]string {
	raw, ok := copy.GetAnnotations()[courier.SpecHashesAnnotation]
	if !ok {
		return nil
	}
	var h map[string]string
	if json.Unmarshal([]byte(raw), &h) != nil {
		return nil
	}
	return h
}

// Forward implements Adapter. For each compared field, the copy's recorded
// fingerprint tells who changed it: a field the manager changed is
// forwarded if the worker's API accepts the change for a running job
// (labels, annotations, forwarded paths, a TrainJob's RuntimePatches while
// the copy is suspended), and refused otherwise; a field edited on the
// worker is set back to the manager's value unless it holds a pod template,
// which the worker's Kueue writes too.
func (k *kindAdapter) Forward(local, remote *unstructured.Unstructured, to Destination) (Forwarding, error) {
	want, err := k.RemoteCopy(local, to)
	if err != nil {
		return Forwarding{}, err
	}
	wantView, haveView := k.view(want), k.view(remote)
	wantHash, haveHash := hashes(wantView), hashes(haveView)
	sent := sentHashes(remote)
	if sent == nil {
		// What a copy from before the record holds counts as sent: any
		// difference is the manager's change.
		sent = haveHash
	}
	var f Forwarding
	// The copy as it must become, made at the first field to write: most
	// passes find nothing to write, and need no copy of the whole object.
	var out *unstructured.Unstructured
	record := maps.Clone(sent)
	fields := slices.Sorted(maps.Keys(wantHash))
	for field := range haveHash {
		if _, ok := wantHash[field]; !ok {
			fields = append(fields, field)
		}
	}
	slices.Sort(fields)
	for _, field := range fields {
		w, h, s := wantHash[field], haveHash[field], sent[field]
		if w == h {
			record[field] = w
			continue
		}
		if _, known := sent[field]; !known && h != "" && w == "" && !slices.Contains(k.forwarded(), field) {
			// Set by the worker's API server or controllers, never sent.
			// (What Courier forwards, it owns on the copy, set or not.)
			continue
		}
		if w != s {
			if why := k.refuseForward(field, remote); why != "" {
				f.Refused = append(f.Refused, Refusal{Field: field, Why: why})
				continue
			}
			f.Forwarded = append(f.Forwarded, field)
		} else {
			if why := k.refuseRestore(field, wantView[field], remote); why != "" {
				f.Refused = append(f.Refused, Refusal{Field: field, Why: "edited on the worker by hand, and " + why, Edited: true})
				continue
			}
			f.Restored = append(f.Restored, field)
		}
		if out == nil {
			out = remote.DeepCopy()
		}
		if err := k.set(out, want, field); err != nil {
			return Forwarding{}, fmt.Errorf("setting %s on the copy: %w", field, err)
		}
		record[field] = w
	}
	if out == nil {
		return f, nil
	}
	for field, h := range record {
		if h == "" {
			delete(record, field)
		}
	}
	if err := stampHashes(out, record); err != nil {
		return Forwarding{}, err
	}
	f.Update = out
	return f, nil
}

// SpecChanged implements Adapter. It finds no change in what the worker's
// Kueue writes into a copy's spec as it starts it: its RuntimePatches
// entry, its pod template labels and selectors, and the copy's resumption.
// A copy suspended again is a change: Forward's view leaves spec.suspend
// out, but a field may be writable only while the copy is suspended (a
// TrainJob's RuntimePatches), and a change refused while it ran may go now.
func (k *kindAdapter) SpecChanged(old, cur *unstructured.Unstructured) bool {
	if old.GetGeneration() == cur.GetGeneration() {
		return false
	}
	suspend := func(job *unstructured.Unstructured) any {
		v, _, _ := unstructured.NestedFieldNoCopy(job.Object, "spec", "suspend")
		return v
	}
	before, after := suspend(old), suspend(cur)
	resumed := before == true && (after == nil || after == false)
	if !resumed && !equality.Semantic.DeepEqual(before, after) {
		return true
	}
	return !equality.Semantic.DeepEqual(k.view(old), k.view(cur))
}

// refuseForward says why a change the manager made to field cannot reach
// a dispatched copy, or "" if it can.
func (k *kindAdapter) refuseForward(field string, remote *unstructured.Unstructured) string {
	forwarded := k.forwarded()
	if !slices.Contains(forwarded, field) {
		return fmt.Sprintf("Courier forwards to a dispatched %s only %s; resubmit the job to change the rest.",
			k.Kind.GVK.Kind, strings.Join(forwarded, ", "))
	}
	return k.refuseWrite(field, remote)
}

// refuseRestore says why a field edited on the worker cannot be set back
// to the manager's value, or "" if it can.
func (k *kindAdapter) refuseRestore(field string, want any, remote *unstructured.Unstructured) string {
	if why := k.refuseWrite(field, remote); why != "" {
		return why
	}
	if holdsPodTemplate(want) {
		return "it holds a pod template, which the worker's Kueue writes too; Courier leaves it as it is."
	}
	return ""
}

// forwarded lists the fields whose changes on the manager reach a copy.
func (k *kindAdapter) forwarded() []string {
	out := append([]string{labelsField, annotationsField}, k.forwards...)
	return append(out, k.ForwardPaths...)
}

func (k *kindAdapter) refuseWrite(field string, remote *unstructured.Unstructured) string {
	if k.writable == nil {
		return ""
	}
	return k.writable(field, remote)
}

// set copies field from want onto out, keeping on out what the worker's
// side owns: reserved labels and annotations, and whatever set keeps for
// the kind.
func (k *kindAdapter) set(out, want *unstructured.Unstructured, field string) error {
	switch field {
	case labelsField:
		out.SetLabels(mergeReserved(out.GetLabels(), want.GetLabels()))
		return nil
	case annotationsField:
		out.SetAnnotations(mergeReserved(out.GetAnnotations(), want.GetAnnotations()))
		return nil
	}
	if k.setField != nil {
		if done, err := k.setField(out, want, field); done || err != nil {
			return err
		}
	}
	path := strings.Split(field, ".")
	v, found, err := unstructured.NestedFieldCopy(want.Object, path...)
	if err != nil {
		return err
	}
	if !found {
		unstructured.RemoveNestedField(out.Object, path...)
		return nil
	}
	return unstructured.SetNestedField(out.Object, v, path...)
}

// mergeReserved returns have's reserved keys with want's others.
func mergeReserved(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range have {
		if reservedKey(k) {
			out[k] = v
		}
	}
	for k, v := range want {
		if !reservedKey(k) {
			out[k] = v
		}
	}
	return out
}
