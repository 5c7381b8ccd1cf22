package watchdecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkWatchDecode decodes a stream shaped like a worker's watches
// during a scale run (the initial events of a watch list, then updates and
// deletes) with client-go's decoders and with this package's. One op is the
// whole stream.
func BenchmarkWatchDecode(b *testing.B) {
	const n = 2000
	s := testScheme(b)
	var typed, unstructured strings.Builder
	for i := range n {
		name := fmt.Sprintf("job-%05d", i)
		typ := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}[i%4]
		typed.WriteString(event(b, typ, withManagedFields(b, workload(name, fmt.Sprint(1000+i)))))
		unstructured.WriteString(event(b, typ, withManagedFields(b, trainJob(name, fmt.Sprint(1000+i)))))
		if i%500 == 499 {
			typed.WriteString(event(b, watch.Bookmark, bookmark(workloadGVK, fmt.Sprint(1000+i))))
			unstructured.WriteString(event(b, watch.Bookmark, bookmark(trainJobGVK, fmt.Sprint(1000+i))))
		}
	}
	typedDecoder, err := NewTypedDecoder(typedSerializer(s), s, workloadGVK)
	if err != nil {
		b.Fatal(err)
	}
	unstructuredDecoder, err := NewUnstructuredDecoder(unstructuredSerializer(), trainJobGVK)
	if err != nil {
		b.Fatal(err)
	}
	dropping := func(d *Decoder) *Decoder { c := *d; return c.DropManagedFields() }
	streams := []struct {
		name    string
		data    []byte
		ns      runtime.NegotiatedSerializer
		decoder *Decoder
	}{
		{"Workload-typed", []byte(typed.String()), typedSerializer(s), typedDecoder},
		{"TrainJob-unstructured", []byte(unstructured.String()), unstructuredSerializer(), unstructuredDecoder},
	}
	for _, st := range streams {
		decoders := map[string]func(io.ReadCloser) watch.Decoder{
			"client-go": func(body io.ReadCloser) watch.Decoder {
				return clientGoDecoder(b, st.ns, st.decoder.gvk.GroupVersion(), body)
			},
			"watchdecode":                   st.decoder.NewEventDecoder,
			"watchdecode-dropManagedFields": dropping(st.decoder).NewEventDecoder,
		}
		for _, impl := range []string{"client-go", "watchdecode", "watchdecode-dropManagedFields"} {
			b.Run(st.name+"/"+impl, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(st.data)))
				events := 0
				for b.Loop() {
					d := decoders[impl](io.NopCloser(bytes.NewReader(st.data)))
					for {
						_, _, err := d.Decode()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						events++
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			})
		}
	}
}

// withManagedFields gives an object managed fields shaped like the API
// server's: an Update entry owning its labels and spec, as the client that
// created it, and one owning its status, each a FieldsV1 tree of the fields.
func withManagedFields(b *testing.B, obj any) map[string]any {
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	md, _ := m["metadata"].(map[string]any)
	entry := func(manager, subresource string, fields map[string]any) map[string]any {
		e := map[string]any{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-11-24T07:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": fieldsOf(fields)}
		if subresource != "" {
			e["subresource"] = subresource
		}
		return e
	}
	md["managedFields"] = []any{
		entry("creator", "", map[string]any{"metadata": map[string]any{"labels": md["labels"]}, "spec": m["spec"]}),
		entry("controller", "status", map[string]any{"status": m["status"]}),
	}
	return m
}

// fieldsOf is the FieldsV1 tree of a JSON value: each key as "f:key", each
// list item as "i:N", each leaf as {}.
func fieldsOf(v any) map[string]any {
	out := map[string]any{}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out["f:"+k] = fieldsOf(x)
		}
	case []any:
		for i, x := range v {
			out[fmt.Sprintf("i:%d", i)] = fieldsOf(x)
		}
	}
	return out
}
