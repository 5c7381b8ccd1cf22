package dispatch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// roundsForgetAfter drops the start of rounds of a Workload deleted while
// nominated, which no later pass forgets. Dropping a live one only starts
// its rounds again; the clusters it holds copies on stay nominated.
const roundsForgetAfter = 24 * time.Hour

// roundStarts remembers when Courier first saw each Workload nominated, for
// the policy's rounds to count from: a workload Courier first plans long
// after its quota was reserved (a backlog, a restart) starts at round 0
// rather than with many workers at once. Kept in memory: after a restart
// rounds start again, while maxWaitTime still counts from the quota
// reservation.
type roundStarts struct {
	mu sync.Mutex
	at map[types.UID]time.Time
	// swept is when old entries were last dropped.
	swept time.Time
}

func newRoundStarts() *roundStarts {
	return &roundStarts{at: map[types.UID]time.Time{}}
}

// since returns when the rounds of Workload uid started: the first time it
// was seen nominated, or now while it is not, which forgets any start from
// an earlier admission.
func (s *roundStarts) since(uid types.UID, nominated bool, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !nominated {
		delete(s.at, uid)
		return now
	}
	if at, ok := s.at[uid]; ok {
		return at
	}
	s.at[uid] = now
	if now.Sub(s.swept) > roundsForgetAfter {
		s.swept = now
		for u, at := range s.at {
			if now.Sub(at) > roundsForgetAfter {
				delete(s.at, u)
			}
		}
	}
	return now
}
