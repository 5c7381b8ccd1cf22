package workload

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
)

// MaxMovesKept bounds the moves kept on a Workload, well above the
// largest maxMoves a policy may set, so that a count per reason is right.
const MaxMovesKept = 64

// Move is one time a worker's eviction sent the Workload elsewhere.
type Move struct {
	Cluster string      `json:"cluster"`
	Reason  string      `json:"reason"`
	At      metav1.Time `json:"at"`
}

// MovesOf reads the moves recorded on a manager Workload, oldest first. A
// record that does not parse was not written by Courier; the error says
// so.
func MovesOf(wl *kueue.Workload) ([]Move, error) {
	raw, ok := wl.Annotations[courier.MovesAnnotation]
	if !ok {
		return nil, nil
	}
	var moves []Move
	if err := json.Unmarshal([]byte(raw), &moves); err != nil {
		return nil, fmt.Errorf("annotation %s=%q is not a list of moves Courier wrote; remove it", courier.MovesAnnotation, raw)
	}
	return moves, nil
}

// WithMove is moves with m added, the oldest dropped past MaxMovesKept.
func WithMove(moves []Move, m Move) []Move {
	out := append(moves[:len(moves):len(moves)], m)
	if len(out) > MaxMovesKept {
		out = out[len(out)-MaxMovesKept:]
	}
	return out
}

// Exhausted says which reason moves counts more than max times, and ""
// if none does.
func Exhausted(moves []Move, max int) string {
	counts := map[string]int{}
	for _, m := range moves {
		if counts[m.Reason]++; counts[m.Reason] > max {
			return m.Reason
		}
	}
	return ""
}

// DescribeMoves lists the moves, "worker: reason", oldest first.
func DescribeMoves(moves []Move) string {
	parts := make([]string, len(moves))
	for i, m := range moves {
		parts[i] = m.Cluster + ": " + m.Reason
	}
	return strings.Join(parts, "; ")
}
