package watchdecode

import (
	"context"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/klog/v2"
	kjson "sigs.k8s.io/json"
)

// Decoder decodes the JSON watch streams of one kind. client-go reads each
// event's bytes about nine times: its framer scans them with encoding/json,
// the envelope's kind is interpreted with a full encoding/json Unmarshal,
// the envelope is unmarshalled (a validity scan, then a skip over the
// object, which RawExtension copies), and the object's kind is interpreted
// and the object unmarshalled again the same way. A Decoder knows the kind
// from its informer, so it frames by brackets, parses the envelope once,
// and decodes the object with one sigs.k8s.io/json Unmarshal (a validity
// scan and a decode): the very call client-go ends with.
//
// Whatever the fast path cannot prove it decodes as client-go would goes to
// client-go's own decoders on the same bytes: an ERROR event (its object is
// a Status), an object of another kind, an envelope with other keys, invalid
// JSON. So every event and error comes out as client-go's would.
type Decoder struct {
	gvk schema.GroupVersionKind
	// decode decodes an object of kind gvk as client-go's object decoder
	// would, or reports false when it is not sure to.
	decode func([]byte) (runtime.Object, bool)
	// envelope and object are client-go's decoders for the envelope and the
	// object, as its Negotiator.StreamDecoder returns them for JSON.
	envelope runtime.Decoder
	object   runtime.Decoder
	// dropManagedFields decodes objects without their managed fields.
	dropManagedFields bool
	// count, if set, is told each event's size in bytes.
	count func(bytes int)
}

// DropManagedFields makes d decode each object without its
// metadata.managedFields, for a cache that strips them anyway
// (StripManagedFields): they are often half an object's bytes, and not
// decoding them saves that share of the decoding and of the garbage.
// An event the fast path leaves to client-go's decoders keeps them, for
// the transform to strip.
func (d *Decoder) DropManagedFields() *Decoder {
	d.dropManagedFields = true
	return d
}

// CountEvents makes d tell count the size in bytes of every event it
// reads, whichever decoder then decodes it: one call per event.
func (d *Decoder) CountEvents(count func(bytes int)) *Decoder {
	d.count = count
	return d
}

// NewTypedDecoder decodes watch events of a typed kind as a typed client
// built by controller-runtime does: with a codec factory over the scheme and
// no conversion or defaulting, the objects' apiVersion and kind cleared.
func NewTypedDecoder(ns runtime.NegotiatedSerializer, scheme *runtime.Scheme, gvk schema.GroupVersionKind) (*Decoder, error) {
	if _, err := scheme.New(gvk); err != nil {
		return nil, err
	}
	return newDecoder(ns, gvk, func(raw []byte) (runtime.Object, bool) {
		obj, err := scheme.New(gvk)
		if err != nil {
			return nil, false
		}
		// The call client-go's JSON serializer makes once it knows the type.
		if kjson.UnmarshalCaseSensitivePreserveInts(raw, obj) != nil {
			return nil, false
		}
		// client-go takes the type from the apiVersion and kind it reads;
		// an object of any other kind goes to client-go's decoder. Keys that
		// only case-fold to apiVersion or kind were refused with the
		// envelope (see skipObject).
		if obj.GetObjectKind().GroupVersionKind() != gvk {
			return nil, false
		}
		// The codec's convention, as runtime.WithoutVersionDecoder does.
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return obj, true
	})
}

// NewUnstructuredDecoder decodes watch events of a kind read as
// unstructured objects, as the dynamic client does.
func NewUnstructuredDecoder(ns runtime.NegotiatedSerializer, gvk schema.GroupVersionKind) (*Decoder, error) {
	return newDecoder(ns, gvk, func(raw []byte) (runtime.Object, bool) {
		// What Unstructured.UnmarshalJSON does: int64-preserving,
		// case-sensitive, into a fresh map.
		m := map[string]any{}
		if utiljson.Unmarshal(raw, &m) != nil {
			return nil, false
		}
		u := &unstructured.Unstructured{Object: m}
		// Keys that only case-fold to apiVersion or kind were refused with
		// the envelope (see skipObject), so client-go reads this same kind.
		if u.GroupVersionKind() != gvk {
			return nil, false
		}
		return u, true
	})
}

func newDecoder(ns runtime.NegotiatedSerializer, gvk schema.GroupVersionKind, decode func([]byte) (runtime.Object, bool)) (*Decoder, error) {
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		return nil, fmt.Errorf("no JSON stream serializer for %s", gvk)
	}
	return &Decoder{
		gvk:      gvk,
		decode:   decode,
		envelope: info.StreamSerializer.Serializer,
		// As runtime.clientNegotiator.StreamDecoder builds it.
		object: ns.DecoderToVersion(info.Serializer, gvk.GroupVersion()),
	}, nil
}

// NewWatcher returns a watch over a JSON watch response body, built as
// client-go's rest.Request.Watch builds one, with this Decoder's decoders.
func (d *Decoder) NewWatcher(ctx context.Context, body io.ReadCloser) watch.Interface {
	return watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), d.NewEventDecoder(body),
		// As rest.Request.newStreamWatcher reports decoding errors.
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"))
}

// NewEventDecoder returns the watch.Decoder for a JSON watch stream.
func (d *Decoder) NewEventDecoder(body io.ReadCloser) watch.Decoder {
	st := &state{decode: d.decode, dropManagedFields: d.dropManagedFields, count: d.count}
	frames := streaming.NewDecoder(newFrameReader(body), &envelopeDecoder{Decoder: d.envelope, st: st})
	return restclientwatch.NewDecoder(frames, &objectDecoder{Decoder: d.object, st: st, gvk: d.gvk})
}

// state passes an object decoded with its envelope to the object decoder.
// client-go's restclientwatch.Decoder decodes the envelope, then hands the
// envelope's raw object to the object decoder; both run in turn on the
// watch's one goroutine.
type state struct {
	decode            func([]byte) (runtime.Object, bool)
	dropManagedFields bool
	count             func(bytes int)
	// buf holds an object's bytes without its managed fields; decoding
	// copies what it keeps, so it is reused from one event to the next.
	buf []byte
	raw []byte
	obj runtime.Object
}

// decodeObject decodes an event's object, without the bytes of its
// managed fields if the decoder drops them.
func (s *state) decodeObject(raw []byte, managedFields span) (runtime.Object, bool) {
	if s.dropManagedFields && !managedFields.empty() {
		s.buf = managedFields.apply(raw, s.buf[:0])
		raw = s.buf
	}
	return s.decode(raw)
}

// take returns the object decoded from exactly these bytes, if any.
func (s *state) take(raw []byte) runtime.Object {
	obj := s.obj
	if obj == nil || len(raw) == 0 || len(raw) != len(s.raw) || &raw[0] != &s.raw[0] {
		return nil
	}
	s.obj, s.raw = nil, nil
	return obj
}

// envelopeDecoder decodes a frame into a metav1.WatchEvent.
type envelopeDecoder struct {
	runtime.Decoder // client-go's, for what the fast path leaves
	st              *state
}

func (e *envelopeDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	e.st.obj, e.st.raw = nil, nil
	// The stream decoder hands over one whole frame per call: one event.
	if e.st.count != nil {
		e.st.count(len(data))
	}
	if ev, ok := into.(*metav1.WatchEvent); ok && defaults == nil {
		if typ, raw, managedFields, ok := parseEnvelope(data); ok {
			// The object is decoded here, not when the object decoder is
			// handed the raw bytes, because a failure must fall back before
			// the envelope is accepted: client-go's framer would have
			// rejected invalid JSON anywhere in the frame.
			if obj, ok := e.st.decodeObject(raw, managedFields); ok {
				ev.Type = typ
				// client-go copies the raw object; nothing keeps it past
				// the object decoder, which this state serves.
				ev.Object = runtime.RawExtension{Raw: raw}
				e.st.obj, e.st.raw = obj, raw
				// restclientwatch.Decoder ignores the returned kind.
				return ev, nil, nil
			}
		}
	}
	if err := validJSON(data); err != nil {
		return nil, nil, err
	}
	return e.Decoder.Decode(data, defaults, into)
}

// objectDecoder returns the object its envelope decoder decoded, and
// otherwise decodes as client-go would.
type objectDecoder struct {
	runtime.Decoder
	st  *state
	gvk schema.GroupVersionKind
}

func (d *objectDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if defaults == nil && into == nil {
		if obj := d.st.take(data); obj != nil {
			gvk := d.gvk
			return obj, &gvk, nil
		}
	}
	return d.Decoder.Decode(data, defaults, into)
}
