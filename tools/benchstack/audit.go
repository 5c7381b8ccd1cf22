package benchstack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"
)

// auditEvent is what the count needs of a kube-apiserver audit event
// (audit.k8s.io/v1 Event, one JSON object a line).
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp  time.Time `json:"stageTimestamp"`
}

// Identity names a client: its program, the user agent up to its first
// slash ("courier", "kueue"), and its user. Both MultiKueue builds are
// program "kueue".
type Identity struct {
	Program string `json:"program"`
	User    string `json:"user"`
}

func (i Identity) String() string { return i.Program + " as " + i.User }

func identityOf(ev *auditEvent) Identity {
	program, _, _ := strings.Cut(ev.UserAgent, "/")
	if strings.HasPrefix(program, "kueue") {
		program = "kueue"
	}
	if program == "" {
		program = "-"
	}
	return Identity{Program: program, User: ev.User.Username}
}

// call is a request's verb and what it was made on; DryRun for a write
// sent with dryRun, which the API server admits and does not store.
type call struct {
	Verb, Group, Resource, Subresource string
	DryRun                             bool
}

// dryRunSuffix marks a dry-run write's call.
const dryRunSuffix = " (dry run)"

// String is "verb resource.group/subresource", the group left out for the
// core API, and dryRunSuffix after a dry run; "verb -" for a request on
// no resource (discovery, probes).
func (c call) String() string {
	if c.Resource == "" {
		return c.Verb + " -"
	}
	s := c.Verb + " " + c.Resource
	if c.Group != "" {
		s += "." + c.Group
	}
	if c.Subresource != "" {
		s += "/" + c.Subresource
	}
	if c.DryRun {
		s += dryRunSuffix
	}
	return s
}

func callOf(ev *auditEvent) call {
	c := call{Verb: ev.Verb}
	if ev.ObjectRef != nil {
		c.Group, c.Resource, c.Subresource = ev.ObjectRef.APIGroup, ev.ObjectRef.Resource, ev.ObjectRef.Subresource
	}
	if isWrite(ev.Verb) {
		if u, err := url.Parse(ev.RequestURI); err == nil && u.Query().Has("dryRun") {
			c.DryRun = true
		}
	}
	return c
}

// resourceKey is "resource.group", or "resource" for the core API, as
// the API servers' watch metrics name resources too.
func resourceKey(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// callCount is how many requests of one call were answered, and of them
// how many were refused with 409 (a conflict, or a create of what
// exists) or failed otherwise. LostTo tells an update's or a patch's
// conflicts apart by the program of the last write to the object before
// the refusal: the write whose version the refused one did not know.
type callCount struct {
	N        uint64            `json:"n"`
	Conflict uint64            `json:"conflict,omitempty"`
	Failed   uint64            `json:"failed,omitempty"`
	LostTo   map[string]uint64 `json:"lostTo,omitempty"`
}

// add adds n to c.
func (c *callCount) add(n callCount) {
	c.N += n.N
	c.Conflict += n.Conflict
	c.Failed += n.Failed
	for program, k := range n.LostTo {
		if c.LostTo == nil {
			c.LostTo = map[string]uint64{}
		}
		c.LostTo[program] += k
	}
}

// unknownWriter is the program a conflict is lost to when the log holds
// no earlier write to the object: one made before the log was first read.
const unknownWriter = "unknown"

// auditWatch is one watch request's life, from its start to its end (zero
// while it runs), with what it watched.
type auditWatch struct {
	identity  Identity
	resource  string
	namespace string
	selector  string
	opened    time.Time
	closed    time.Time
}

// watchSpan is one watch's time within a phase's window.
type watchSpan struct {
	Identity  Identity `json:"identity"`
	Resource  string   `json:"resource"`
	Namespace string   `json:"namespace,omitempty"`
	Selector  string   `json:"selector,omitempty"`
	Seconds   float64  `json:"seconds"`
}

// windowAudit is what one API server's audit log says of a phase's window:
// the requests received in it by identity and call (a watch counted when
// it started), each identity's busiest second, and every watch that ran
// during the window.
type windowAudit struct {
	Requests map[Identity]map[call]*callCount
	PeakQPS  map[Identity]uint64
	Watches  []watchSpan
	// Skipped counts lines that were not events.
	Skipped int
	// Rotations counts the files the read finished and let go of because
	// the API server had rotated its log: the count went on in the next.
	Rotations int
}

// auditLog reads one API server's audit log phase after phase, each line
// once: it holds the file open, remembers where it stopped and the watches
// still running. The API server rotates its log at 100 MiB by renaming it
// and starting a new one at the same path; the file held is then read to
// its end before the new one is opened.
type auditLog struct {
	path    string
	file    *os.File
	offset  int64
	watches map[string]*auditWatch
	// lastWriter is the program of the last stored write to each object
	// the log has shown, in every window so far, for the conflicts that
	// follow (callCount.LostTo). Events are left out: thousands of
	// objects written once.
	lastWriter map[objectKey]string
}

// objectKey names one object on one API server; the status subresource
// shares its object's versions.
type objectKey struct {
	group, resource, namespace, name string
}

func newAuditLog(path string) *auditLog {
	return &auditLog{path: path, watches: map[string]*auditWatch{}, lastWriter: map[objectKey]string{}}
}

// window reads the log from where the last read stopped to its end and
// returns what it says of [from, to). Requests received before from are
// passed over; the log is written as requests are answered, so a read
// just after to holds every request received in the window.
func (l *auditLog) window(from, to time.Time) (windowAudit, error) {
	w, perSecond := newWindowAudit()
	for {
		if l.file == nil {
			f, err := os.Open(l.path)
			if err != nil {
				return windowAudit{}, fmt.Errorf("opening the audit log: %w", err)
			}
			l.file, l.offset = f, 0
		}
		if err := l.readHeld(from, to, &w, perSecond); err != nil {
			return windowAudit{}, err
		}
		rotated, err := l.rotated()
		if err != nil {
			return windowAudit{}, err
		}
		if !rotated {
			l.finish(&w, perSecond, from, to)
			return w, nil
		}
		// Lines may have reached the old file between the read above and
		// its rename; none reach it after.
		if err := l.readHeld(from, to, &w, perSecond); err != nil {
			return windowAudit{}, err
		}
		l.close()
		w.Rotations++
	}
}

// readHeld reads the held file's whole lines from the offset on.
func (l *auditLog) readHeld(from, to time.Time, w *windowAudit, perSecond map[Identity]map[int64]uint64) error {
	if _, err := l.file.Seek(l.offset, io.SeekStart); err != nil {
		return fmt.Errorf("reading the audit log %s: %w", l.path, err)
	}
	read, err := l.scan(l.file, from, to, w, perSecond)
	l.offset += read
	if err != nil {
		return fmt.Errorf("reading the audit log %s: %w", l.path, err)
	}
	return nil
}

// rotated reports whether the path now names another file than the one
// held. A path with no file yet is the moment within a rotation between
// the rename and the new file: the next read opens it.
func (l *auditLog) rotated() (bool, error) {
	held, err := l.file.Stat()
	if err != nil {
		return false, fmt.Errorf("reading the audit log %s: %w", l.path, err)
	}
	now, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the audit log %s: %w", l.path, err)
	}
	return !os.SameFile(held, now), nil
}

// close lets go of the file held, if any.
func (l *auditLog) close() {
	if l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}

func newWindowAudit() (windowAudit, map[Identity]map[int64]uint64) {
	return windowAudit{Requests: map[Identity]map[call]*callCount{}, PeakQPS: map[Identity]uint64{}}, map[Identity]map[int64]uint64{}
}

// scan reads whole lines from r into w, and returns how many bytes they
// took: a last line without its newline is still being written and is
// left for the next read.
func (l *auditLog) scan(r io.Reader, from, to time.Time, w *windowAudit, perSecond map[Identity]map[int64]uint64) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var read int64
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return read, nil
		}
		if err != nil {
			return read, err
		}
		read += int64(len(line))
		var ev auditEvent
		if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil {
			w.Skipped++
			continue
		}
		l.record(&ev, from, to, w, perSecond)
	}
}

// finish sets each identity's busiest second and the watches that ran in
// the window, once every line of it is read.
func (l *auditLog) finish(w *windowAudit, perSecond map[Identity]map[int64]uint64, from, to time.Time) {
	for id, seconds := range perSecond {
		for _, n := range seconds {
			w.PeakQPS[id] = max(w.PeakQPS[id], n)
		}
	}
	w.Watches = l.spans(from, to)
}

// record counts one event: a request answered in the window, or a watch
// starting (counted if it started in the window) or ending.
func (l *auditLog) record(ev *auditEvent, from, to time.Time, w *windowAudit, perSecond map[Identity]map[int64]uint64) {
	watch := ev.Verb == "watch"
	switch {
	case watch && ev.Stage == "ResponseStarted":
		l.watches[ev.AuditID] = watchOf(ev)
	case watch && ev.Stage == "ResponseComplete":
		if open := l.watches[ev.AuditID]; open != nil {
			open.closed = ev.StageTimestamp
			return
		}
		// Its start was not logged: a watch refused at once, counted as
		// a request now.
		done := watchOf(ev)
		done.closed = ev.StageTimestamp
		l.watches[ev.AuditID] = done
	case ev.Stage != "ResponseComplete":
		return
	}
	c := callOf(ev)
	lostTo := l.trackWriter(ev, c)
	if ev.RequestReceived.Before(from) || !ev.RequestReceived.Before(to) {
		return
	}
	id := identityOf(ev)
	if w.Requests[id] == nil {
		w.Requests[id] = map[call]*callCount{}
		perSecond[id] = map[int64]uint64{}
	}
	cc := w.Requests[id][c]
	if cc == nil {
		cc = &callCount{}
		w.Requests[id][c] = cc
	}
	cc.N++
	if ev.ResponseStatus != nil {
		switch code := ev.ResponseStatus.Code; {
		case code == 409:
			cc.Conflict++
			if lostTo != "" {
				if cc.LostTo == nil {
					cc.LostTo = map[string]uint64{}
				}
				cc.LostTo[lostTo]++
			}
		case code >= 400:
			cc.Failed++
		}
	}
	perSecond[id][ev.RequestReceived.Unix()]++
}

// trackWriter keeps the program of each stored write to an object, and
// returns, for an update or a patch refused with 409, the program of the
// write before it: unknownWriter when the log holds none; "" for any
// other request. c is ev's call.
func (l *auditLog) trackWriter(ev *auditEvent, c call) string {
	if !isWrite(ev.Verb) || ev.ObjectRef == nil || ev.ObjectRef.Name == "" || ev.ResponseStatus == nil ||
		ev.ObjectRef.Resource == "events" || c.DryRun {
		return ""
	}
	key := objectKey{ev.ObjectRef.APIGroup, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name}
	switch code := ev.ResponseStatus.Code; {
	case code == 409 && (ev.Verb == "update" || ev.Verb == "patch"):
		if w, ok := l.lastWriter[key]; ok {
			return w
		}
		return unknownWriter
	case code >= 300:
		return ""
	case ev.Verb == "delete":
		delete(l.lastWriter, key)
	default:
		l.lastWriter[key] = identityOf(ev).Program
	}
	return ""
}

func watchOf(ev *auditEvent) *auditWatch {
	w := &auditWatch{identity: identityOf(ev), opened: ev.RequestReceived}
	if ev.ObjectRef != nil {
		w.resource = resourceKey(ev.ObjectRef.APIGroup, ev.ObjectRef.Resource)
		w.namespace = ev.ObjectRef.Namespace
	}
	if u, err := url.Parse(ev.RequestURI); err == nil {
		w.selector = u.Query().Get("labelSelector")
	}
	return w
}

// spans returns each watch's time within [from, to), and forgets the
// watches that ended before to.
func (l *auditLog) spans(from, to time.Time) []watchSpan {
	var out []watchSpan
	for id, w := range l.watches {
		start, end := later(w.opened, from), to
		if !w.closed.IsZero() && w.closed.Before(to) {
			end = w.closed
			delete(l.watches, id)
		}
		if end.After(start) {
			out = append(out, watchSpan{Identity: w.identity, Resource: w.resource, Namespace: w.namespace,
				Selector: w.selector, Seconds: end.Sub(start).Seconds()})
		}
	}
	return out
}

// APIRequests are one identity's requests to one API server, or to several,
// over a phase.
type APIRequests struct {
	// ByCall counts each call ("verb resource.group/subresource").
	ByCall map[string]callCount `json:"byCall"`
	// PeakQPS is the most requests received in one second.
	PeakQPS uint64 `json:"peakQPS"`
	// WatchEvents and WatchBytes are the watch events the identity's
	// watches received, and their bytes, by resource: the API servers'
	// own counts, shared among the watches (watchevents.go).
	WatchEvents map[string]float64 `json:"watchEvents,omitempty"`
	WatchBytes  map[string]float64 `json:"watchBytes,omitempty"`
}

// RequestTotals are an identity's requests by kind.
type RequestTotals struct {
	Writes, Gets, Lists, WatchesOpened, Other float64
	WatchEvents, WatchBytes                   float64
}

// Totals adds the calls up by kind. Other is discovery, health probes,
// any call on no resource, and dry-run writes, which store nothing.
func (r APIRequests) Totals() RequestTotals {
	var t RequestTotals
	for key, c := range r.ByCall {
		verb, resource, _ := strings.Cut(key, " ")
		n := float64(c.N)
		switch {
		case strings.HasSuffix(key, dryRunSuffix):
			t.Other += n
		case isWrite(verb):
			t.Writes += n
		case resource == "-":
			t.Other += n
		case verb == "get":
			t.Gets += n
		case verb == "list":
			t.Lists += n
		case verb == "watch":
			t.WatchesOpened += n
		default:
			t.Other += n
		}
	}
	for _, n := range r.WatchEvents {
		t.WatchEvents += n
	}
	for _, n := range r.WatchBytes {
		t.WatchBytes += n
	}
	return t
}

// merge adds an API server's counts of one identity to r.
func (r *APIRequests) merge(calls map[call]*callCount, peak uint64) {
	if r.ByCall == nil {
		r.ByCall = map[string]callCount{}
	}
	for c, n := range calls {
		sum := r.ByCall[c.String()]
		sum.add(*n)
		r.ByCall[c.String()] = sum
	}
	r.PeakQPS = max(r.PeakQPS, peak)
}
