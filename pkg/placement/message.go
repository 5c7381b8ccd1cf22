package placement

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The message goes into an admission check's message and events, so it is
// bounded: names of nominated clusters stop at maxNominated bytes, each
// reason at maxReason, and the passed-over list at maxMessage, each list
// ending with "and N more". With names of at most 253 bytes the first
// passed-over cluster always fits; clip guarantees the bound regardless.
const (
	maxMessage   = 1024
	maxNominated = 384
	maxReason    = 160
)

// message explains a decision: what was nominated, out of how many, and
// why each other cluster was passed over, in the order of Considered.
func message(d Decision, pol Policy, clusters, waiting int) string {
	var b strings.Builder
	if d.Expired {
		fmt.Fprintf(&b, "Waited longer than maxWaitTime (%s). ", pol.MaxWaitTime)
	}
	switch {
	case clusters == 0:
		b.WriteString("The policy has no clusters.")
	case len(d.Nominate) > 0:
		b.WriteString("Nominated ")
		writeList(&b, d.Nominate, ", ", maxNominated)
		if len(d.Nominate) == 1 {
			fmt.Fprintf(&b, " (best of %d", clusters)
		} else {
			fmt.Fprintf(&b, " (best %d of %d", len(d.Nominate), clusters)
		}
		if waiting > 0 {
			fmt.Fprintf(&b, "; %d more eligible in later rounds", waiting)
		}
		b.WriteString(").")
	case d.Impossible:
		b.WriteString("No cluster could ever hold the workload.")
	default:
		b.WriteString("No cluster is eligible.")
	}

	switch {
	case d.Preempting != "" && d.HeldBack > 0:
		fmt.Fprintf(&b, " %s may preempt; %d more would have to and wait, as one cluster preempts at a time.", clip(d.Preempting, maxReason), d.HeldBack)
	case d.Preempting != "":
		fmt.Fprintf(&b, " %s may preempt.", clip(d.Preempting, maxReason))
	case d.HeldBack > 0:
		fmt.Fprintf(&b, " %d more would have to preempt and wait for the clusters with room first.", d.HeldBack)
	}

	var passed []string
	for _, v := range d.Considered {
		if !v.Eligible {
			passed = append(passed, v.Cluster+": "+clip(tidy(v.Reason), maxReason))
		}
	}
	if len(passed) > 0 {
		b.WriteString(" Passed over: ")
		writeList(&b, passed, "; ", maxMessage-len("."))
		b.WriteString(".")
	}
	return clip(b.String(), maxMessage)
}

// writeList writes items joined by sep for as long as b stays within limit
// bytes, keeping room for " and N more" for the rest. The first item is
// always written.
func writeList(b *strings.Builder, items []string, sep string, limit int) {
	for i, item := range items {
		cost := len(item)
		if i > 0 {
			cost += len(sep)
		}
		reserve := 0
		if rest := len(items) - i - 1; rest > 0 {
			reserve = len(fmt.Sprintf(" and %d more", rest))
		}
		if i > 0 && b.Len()+cost+reserve > limit {
			fmt.Fprintf(b, " and %d more", len(items)-i)
			return
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(item)
	}
}

// tidy makes a reason one line without a final period, since the message
// adds its own punctuation.
func tidy(s string) string {
	return strings.TrimSuffix(strings.Join(strings.Fields(s), " "), ".")
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
