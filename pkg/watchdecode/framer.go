package watchdecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/util/framer"
)

// frameReader splits a JSON watch stream into its top-level objects, as
// client-go's JSON framer (framer.NewJSONFramedReader) does, and with the
// same Read contract: one frame per Read, io.ErrShortBuffer while a frame
// does not fit.
//
// client-go's framer runs encoding/json's full scanner over every byte only
// to find where a value ends; the bytes are validated again later anyway.
// This reader finds the end by tracking strings and brackets alone, which is
// exact for valid JSON. Where it cannot be sure it is exact, it hands the
// rest of the stream to client-go's framer or error path:
//   - a top-level value that is not an object, or a closing bracket that does
//     not match, switches the rest of the stream to client-go's framer, so
//     that the same frames or errors come out;
//   - a frame that is structurally whole but not valid JSON is caught by the
//     envelope decoder, which then reports encoding/json's own error;
//   - a stream that ends or fails inside a frame returns what encoding/json
//     returns for those bytes and that error: io.ErrUnexpectedEOF for a
//     truncated stream, or the syntax error met before it.
type frameReader struct {
	r   io.ReadCloser
	buf []byte // buf[off:] has been read from r but not returned
	off int

	// Scan state of the frame starting at buf[off], kept across reads so a
	// large frame is scanned once.
	started bool   // the frame's '{' has been seen
	pos     int    // next byte to scan, relative to off
	stack   []byte // open brackets
	inStr   bool

	remaining []byte        // rest of a frame larger than the caller's buffer
	readErr   error         // error that came with the last bytes read
	err       error         // sticky error, as json.Decoder's
	fallback  io.ReadCloser // client-go's framer, once this reader gave up
}

func newFrameReader(r io.ReadCloser) *frameReader { return &frameReader{r: r} }

func (f *frameReader) Read(data []byte) (int, error) {
	if f.fallback != nil {
		return f.fallback.Read(data)
	}
	if len(f.remaining) > 0 {
		n := copy(data, f.remaining)
		f.remaining = f.remaining[n:]
		if len(f.remaining) > 0 {
			return n, io.ErrShortBuffer
		}
		f.remaining = nil
		return n, nil
	}
	frame, err := f.next()
	if err != nil {
		return 0, err
	}
	if frame == nil {
		return f.fallback.Read(data)
	}
	n := copy(data, frame)
	if n < len(frame) {
		// frame aliases buf, which the next read reuses.
		f.remaining = append([]byte(nil), frame[n:]...)
		return n, io.ErrShortBuffer
	}
	return n, nil
}

func (f *frameReader) Close() error {
	if f.fallback != nil {
		return f.fallback.Close()
	}
	return f.r.Close()
}

// next returns the next frame, or nil once it has switched to the fallback.
func (f *frameReader) next() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	for {
		frame, bad := f.scan()
		if bad {
			rest := append([]byte(nil), f.buf[f.off:]...)
			var src io.Reader = io.MultiReader(bytes.NewReader(rest), f.r)
			if f.readErr != nil {
				src = io.MultiReader(bytes.NewReader(rest), errReader{f.readErr})
			}
			f.fallback = framer.NewJSONFramedReader(readCloser{src, f.r})
			return nil, nil
		}
		if frame != nil {
			return frame, nil
		}
		if err := f.fill(); err != nil {
			if !f.started {
				// Only whitespace since the last frame: json.Decoder
				// returns the reader's error as it is (io.EOF at the end).
				f.err = err
			} else {
				f.err = decodeError(f.buf[f.off:], err)
			}
			return nil, f.err
		}
	}
}

// scan continues scanning the current frame. It returns the frame once its
// outermost object closes, or bad when the stream is not a sequence of
// well-bracketed objects.
func (f *frameReader) scan() (frame []byte, bad bool) {
	b := f.buf[f.off:]
	i := f.pos
	if !f.started {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		f.off += i
		f.pos = 0
		if i == len(b) {
			return nil, false
		}
		if b[i] != '{' {
			return nil, true
		}
		b, i = f.buf[f.off:], 0
		f.started = true
	}
	for i < len(b) {
		if f.inStr {
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				i = len(b)
				break
			}
			i += j
			// The quote closes the string unless an odd run of backslashes
			// escapes it. The opening quote bounds the run.
			k := i - 1
			for b[k] == '\\' {
				k--
			}
			if (i-1-k)%2 == 0 {
				f.inStr = false
			}
			i++
			continue
		}
		switch c := b[i]; c {
		case '"':
			f.inStr = true
		case '{', '[':
			f.stack = append(f.stack, c)
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(f.stack) == 0 || f.stack[len(f.stack)-1] != open {
				return nil, true
			}
			f.stack = f.stack[:len(f.stack)-1]
			if len(f.stack) == 0 {
				frame = b[:i+1]
				f.off += i + 1
				f.pos, f.started = 0, false
				return frame, false
			}
		}
		i++
	}
	f.pos = i
	return nil, false
}

// fill reads more bytes, compacting or growing buf as needed.
func (f *frameReader) fill() error {
	if f.readErr != nil {
		return f.readErr
	}
	if f.off > 0 && (f.off == len(f.buf) || f.off >= cap(f.buf)/2) {
		n := copy(f.buf, f.buf[f.off:])
		f.buf, f.off = f.buf[:n], 0
	}
	if len(f.buf) == cap(f.buf) {
		grown := make([]byte, len(f.buf), max(2*cap(f.buf), 64<<10))
		copy(grown, f.buf)
		f.buf = grown
	}
	n, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf = f.buf[:len(f.buf)+n]
	if err != nil {
		if n > 0 {
			f.readErr = err
			return nil
		}
		return err
	}
	return nil
}

// decodeError is what json.Decoder, and so client-go's framer, returns for a
// stream whose last, unfinished value starts with partial and whose reader
// then failed with err: the syntax error in partial if there is one, else
// io.ErrUnexpectedEOF at the end of the stream, else err.
func decodeError(partial []byte, err error) error {
	var raw json.RawMessage
	derr := json.NewDecoder(io.MultiReader(bytes.NewReader(partial), errReader{err})).Decode(&raw)
	if derr == nil {
		// Cannot happen for an unclosed object; keep the stream's error.
		return err
	}
	return derr
}

// validJSON returns encoding/json's error for a frame that is not valid
// JSON, exactly as client-go's framer would have returned it.
func validJSON(frame []byte) error {
	if json.Valid(frame) {
		return nil
	}
	var raw json.RawMessage
	err := json.NewDecoder(bytes.NewReader(frame)).Decode(&raw)
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type readCloser struct {
	io.Reader
	io.Closer
}
