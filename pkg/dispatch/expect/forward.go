package expect

import "time"

// Forwarded records a write to a copy, named by key (the copy's and the
// manager object's versions), that Courier made or the worker refused: an
// informer that has not shown the new version yet would ask for the same
// write, and a refusal stands until either side changes.
func (e *Expectations) Forwarded(key string, now time.Time) { e.forwarded.put(key, struct{}{}, now) }

// WasForwarded reports whether the write named key was made or refused
// lately.
func (e *Expectations) WasForwarded(key string, now time.Time) bool {
	return e.forwarded.has(key, now)
}

// Report records that the note named key was reported, and says whether it
// had been already: a refusal stands until the job changes, and each pass
// would repeat it.
func (e *Expectations) Report(key string, now time.Time) (already bool) {
	already = e.reported.has(key, now)
	e.reported.put(key, struct{}{}, now)
	return already
}
