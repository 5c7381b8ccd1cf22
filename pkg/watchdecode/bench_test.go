package watchdecode

import (
	"bytes"
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
		typed.WriteString(event(b, typ, workload(name, fmt.Sprint(1000+i))))
		unstructured.WriteString(event(b, typ, trainJob(name, fmt.Sprint(1000+i))))
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
			"watchdecode": st.decoder.NewEventDecoder,
		}
		for _, impl := range []string{"client-go", "watchdecode"} {
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
