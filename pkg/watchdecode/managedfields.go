package watchdecode

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

// StripManagedFields is a cache transform that removes every object's
// metadata.managedFields, as client-go's TransformStripManagedFields does,
// without first converting an unstructured object's entries to typed ones
// only to see whether there are any: that conversion, by reflection and
// JSON, costs more than every other part of decoding an event.
func StripManagedFields() toolscache.TransformFunc {
	return func(in any) (any, error) {
		if u, ok := in.(*unstructured.Unstructured); ok {
			if md, ok := u.Object["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
			return in, nil
		}
		if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
			obj.SetManagedFields(nil)
		}
		return in, nil
	}
}

// WithoutManagedFields returns the JSON object b without the managedFields
// member of its metadata, in a new slice; or b itself when it has none or
// is not an object the scan reads. For objects read only to look at
// other fields: admission requests carry managed fields too.
func WithoutManagedFields(b []byte) []byte {
	if out, ok := withoutManagedFields(b); ok {
		return out
	}
	return b
}

// withoutManagedFields returns the JSON object b (after any whitespace)
// without the managedFields member of its top-level metadata, in a slice of
// just that size, and true; or false if b is not an object skipObject reads
// or has no such member.
func withoutManagedFields(b []byte) ([]byte, bool) {
	_, cut, ok := skipObject(b, skipSpace(b, 0))
	if !ok || cut.empty() {
		return nil, false
	}
	return cut.apply(b, make([]byte, 0, len(b)-(cut.to-cut.from))), true
}

// span is the bytes b[from:to]; the zero span is none.
type span struct{ from, to int }

func (s span) empty() bool { return s.to == 0 }

func (s span) shift(by int) span {
	if s.empty() {
		return s
	}
	return span{s.from + by, s.to + by}
}

// apply appends b without the span to buf.
func (s span) apply(b, buf []byte) []byte {
	return append(append(buf, b[:s.from]...), b[s.to:]...)
}

// managedFields follows skipObject's scan of an object to find the member
// managedFields of its metadata, and the bytes to cut to drop it: the
// member and one comma beside it, the one after it or, for metadata's last
// member, the one before it. It watches only keys and the commas and
// brackets at metadata's depth, so the scan stays one pass.
//
// The member's value is not examined: dropped, it is not validated as the
// rest is when decoded. The API server writes valid JSON; a value that was
// not would have failed client-go's decoding of the event. A second
// metadata or managedFields, which the API server does not write, drops
// nothing.
type managedFields struct {
	metadataNext bool // the last top-level key was metadata; its value comes
	metadataOpen bool // between metadata's braces, at depth 2
	metadataSeen bool
	member       bool // between the key managedFields and the end of its value
	found, bad   bool
	keyQuote     int // the key's opening quote
	lastComma    int // the last comma in metadata before the member, or -1
	span         span
}

func (m *managedFields) topLevelKey(k []byte) {
	m.metadataNext = string(k) == "metadata"
	if m.metadataNext {
		m.bad = m.bad || m.metadataSeen
		m.metadataSeen = true
	}
}

// opened sees a bracket open, an object's or an array's.
func (m *managedFields) opened(depth int, object bool) {
	if depth == 2 && m.metadataNext {
		m.metadataOpen, m.metadataNext, m.lastComma = object, false, -1
	}
}

func (m *managedFields) inMetadata(depth int) bool { return m.metadataOpen && depth == 2 }

// metadataKey sees a key inside metadata or deeper; only metadata's own
// keys are taken as keys by the scan.
func (m *managedFields) metadataKey(k []byte, quote int) {
	if string(k) != "managedFields" {
		return
	}
	m.bad = m.bad || m.found
	m.found, m.member, m.keyQuote = true, true, quote
}

func (m *managedFields) comma(depth, i int) {
	if !m.inMetadata(depth) {
		return
	}
	if m.member {
		m.span, m.member = span{m.keyQuote, i + 1}, false
		return
	}
	m.lastComma = i
}

func (m *managedFields) closed(depth, i int) {
	if !m.inMetadata(depth) {
		return
	}
	m.metadataOpen = false
	if m.member {
		from := m.keyQuote
		if m.lastComma >= 0 {
			from = m.lastComma
		}
		m.span, m.member = span{from, i}, false
	}
}

func (m *managedFields) cut() span {
	if m.bad {
		return span{}
	}
	return m.span
}
