package watchdecode

import (
	"bytes"
	"strings"
)

// parseEnvelope reads a watch event as the API server writes it,
// {"type":"ADDED","object":{...}}, and returns its type, the bytes of its
// object, and within those the bytes to cut to drop the object's managed
// fields, if it has any. It accepts only what it can read exactly as
// sigs.k8s.io/json reads a metav1.WatchEvent:
//   - the keys "type" and "object", once each, in either order, and no
//     other key (sigs.k8s.io/json matches keys case-sensitively; an unknown
//     key would be ignored there, but is rare enough to leave to it);
//   - a type string of plain ASCII with no escapes, so its bytes are its
//     value;
//   - an object value that is a JSON object, whose bytes the caller then
//     decodes with sigs.k8s.io/json, which validates them.
//
// Anything else reports false, and the caller uses client-go's decoder.
func parseEnvelope(b []byte) (typ string, object []byte, cut span, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", nil, span{}, false
	}
	i++
	var haveType, haveObject bool
	for {
		i = skipSpace(b, i)
		key, next, ok := plainString(b, i)
		if !ok {
			return "", nil, span{}, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return "", nil, span{}, false
		}
		i = skipSpace(b, i+1)
		switch {
		case string(key) == "type" && !haveType:
			value, next, ok := plainString(b, i)
			if !ok {
				return "", nil, span{}, false
			}
			typ, haveType, i = string(value), true, next
		case string(key) == "object" && !haveObject:
			end, c, ok := skipObject(b, i)
			if !ok {
				return "", nil, span{}, false
			}
			object, cut, haveObject = b[i:end], c.shift(-i), true
			i = end
		default:
			return "", nil, span{}, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return "", nil, span{}, false
		}
		switch b[i] {
		case ',':
			i++
			continue
		case '}':
			if !haveType || !haveObject || skipSpace(b, i+1) != len(b) {
				return "", nil, span{}, false
			}
			return typ, object, cut, true
		default:
			return "", nil, span{}, false
		}
	}
}

// plainString reads a JSON string at b[i] made of printable ASCII without
// escapes, and returns its contents and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipObject returns the index after the JSON object starting at b[i],
// tracking only strings and brackets; the bytes are validated when decoded.
// On the way it finds the member managedFields of the object's metadata,
// and returns the bytes to cut to drop it (see managedFields).
//
// It also reports false for an object with a top-level key that is escaped,
// or that only case-folds to "kind" or "apiVersion": client-go reads the
// object's kind with encoding/json, which matches keys case-insensitively,
// so such a key could make it see another kind than the case-sensitive
// decode does. The API server never writes one; client-go decodes it.
func skipObject(b []byte, i int) (end int, cut span, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, span{}, false
	}
	depth := 0
	key := false // the next string is a key: at depth 1, or in metadata
	var mf managedFields
	for i < len(b) {
		switch b[i] {
		case '"':
			j, ok := stringEnd(b, i)
			if !ok {
				return 0, span{}, false
			}
			if key {
				k := b[i+1 : j]
				if depth == 1 {
					if !plainKey(k) {
						return 0, span{}, false
					}
					mf.topLevelKey(k)
				} else {
					mf.metadataKey(k, i)
				}
				key = false
			}
			i = j
		case '{':
			depth++
			mf.opened(depth, true)
			key = depth == 1 || mf.inMetadata(depth)
		case '[':
			depth++
			mf.opened(depth, false)
		case ',':
			mf.comma(depth, i)
			key = depth == 1 || mf.inMetadata(depth)
		case '}', ']':
			mf.closed(depth, i)
			depth--
			if depth == 0 {
				return i + 1, mf.cut(), true
			}
		}
		i++
	}
	return 0, span{}, false
}

// stringEnd returns the index of the quote closing the JSON string that
// starts at b[i]: the first not escaped by an odd run of backslashes.
func stringEnd(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		n := 0
		for b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j, true
		}
		j++
	}
}

// plainKey reports whether a top-level key reads the same to encoding/json's
// case-insensitive matching of apiVersion and kind as to sigs.k8s.io/json.
func plainKey(k []byte) bool {
	if bytes.IndexByte(k, '\\') >= 0 {
		return false
	}
	key := string(k) // no allocation: compared only
	return key == "kind" || key == "apiVersion" || (!strings.EqualFold(key, "kind") && !strings.EqualFold(key, "apiVersion"))
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}
