package benchstack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	courier "github.com/courierdev/courier/api/v1alpha1"
	"github.com/courierdev/courier/tools/localcluster"
	"github.com/courierdev/courier/tools/promtext"
)

// The API servers' counts of the watch events they send, one per event
// per watch, by group, version and resource.
const (
	watchEventsMetric = "apiserver_watch_events_total"
	watchSizesMetric  = "apiserver_watch_events_sizes"
)

// watchTotal is a number of watch events and their bytes.
type watchTotal struct {
	Events float64 `json:"events"`
	Bytes  float64 `json:"bytes"`
}

// watchTotals are by resource ("resource.group").
type watchTotals map[string]watchTotal

// parseWatchEvents sums the API server's watch event counts and sizes
// over versions, by resource.
func parseWatchEvents(f promtext.Families) watchTotals {
	out := watchTotals{}
	for _, m := range f.Series(watchEventsMetric, nil) {
		l := promtext.Labels(m)
		key := resourceKey(l["group"], l["resource"])
		t := out[key]
		t.Events += m.GetCounter().GetValue()
		out[key] = t
	}
	for _, m := range f.Series(watchSizesMetric, nil) {
		l := promtext.Labels(m)
		key := resourceKey(l["group"], l["resource"])
		t := out[key]
		t.Bytes += m.GetHistogram().GetSampleSum()
		out[key] = t
	}
	return out
}

// minus is what was added since before.
func (w watchTotals) minus(before watchTotals) watchTotals {
	out := watchTotals{}
	for k, t := range w {
		b := before[k]
		if d := (watchTotal{Events: t.Events - b.Events, Bytes: t.Bytes - b.Bytes}); d.Events > 0 {
			out[k] = d
		}
	}
	return out
}

// scrapeWatchEvents reads a cluster's API server's watch event counts,
// with the admin credentials its /metrics needs.
func scrapeWatchEvents(ctx context.Context, env *localcluster.Env, cluster string) (watchTotals, error) {
	cfg, err := env.RESTConfig(cluster)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating an HTTP client of %s: %w", cluster, err)
	}
	f, err := promtext.ScrapeWith(ctx, hc, strings.TrimSuffix(cfg.Host, "/")+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("reading the watch events of %s's API server: %w", cluster, err)
	}
	return parseWatchEvents(f), nil
}

// selectorKeys are the labels the dispatchers' and the harness's watches
// select by: Courier's origin, MultiKueue's, and the phase's run.
var selectorKeys = []string{courier.OriginLabel, kueue.MultiKueueOriginLabel, runLabel}

// eventTally counts the watch events the harness's own informers saw, by
// cluster, resource and the object's selectorKeys labels: each is an event
// every watch of that resource whose selector matches those labels was
// sent too.
type eventTally struct {
	mu     sync.Mutex
	counts map[string]map[string]map[string]float64
}

func newEventTally() *eventTally {
	return &eventTally{counts: map[string]map[string]map[string]float64{}}
}

// seen counts one event of obj, of resource, on cluster.
func (t *eventTally) seen(cluster, resource string, obj client.Object) {
	set := labels.Set{}
	for _, k := range selectorKeys {
		if v, ok := obj.GetLabels()[k]; ok {
			set[k] = v
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts[cluster] == nil {
		t.counts[cluster] = map[string]map[string]float64{}
	}
	if t.counts[cluster][resource] == nil {
		t.counts[cluster][resource] = map[string]float64{}
	}
	t.counts[cluster][resource][set.String()]++
}

// of returns one cluster's counts, by resource and labels.
func (t *eventTally) of(cluster string) map[string]map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]map[string]float64{}
	for r, byLabels := range t.counts[cluster] {
		out[r] = maps.Clone(byLabels)
	}
	return out
}

// attributed is one API server's watch events shared among the watches
// that ran in a phase, totalled by identity and resource.
type attributed struct {
	byIdentity map[Identity]watchTotals
	// unattributed are events of resources no watch of the window could
	// take: watches of the harness only, or bookmarks of watches that
	// ended before the window.
	unattributed watchTotals
}

// attributeWatchEvents shares an API server's watch events of a window
// among the watches that ran in it. Of a resource the harness watched
// (seen), a watch in the job namespace or all namespaces whose selector
// uses only selectorKeys gets the events of the objects its selector
// matches, for its share of the window; the API server's count of the
// rest (bookmarks, other namespaces, other selectors) is shared among the
// other watches of that resource by their seconds in the window. If the
// events modelled so outnumber the API server's, they are scaled to it: the
// totals are always the API server's.
func attributeWatchEvents(server watchTotals, spans []watchSpan, seen map[string]map[string]float64, window float64) attributed {
	out := attributed{byIdentity: map[Identity]watchTotals{}, unattributed: watchTotals{}}
	byResource := map[string][]watchSpan{}
	for _, s := range spans {
		byResource[s.Resource] = append(byResource[s.Resource], s)
	}
	add := func(id Identity, resource string, events, size float64) {
		if events <= 0 {
			return
		}
		if out.byIdentity[id] == nil {
			out.byIdentity[id] = watchTotals{}
		}
		t := out.byIdentity[id][resource]
		t.Events += events
		t.Bytes += events * size
		out.byIdentity[id][resource] = t
	}
	for _, resource := range slices.Sorted(maps.Keys(server)) {
		total := server[resource]
		size := total.Bytes / total.Events
		modelled := map[int]float64{}
		var modelledSum, restSeconds float64
		for i, s := range byResource[resource] {
			n, ok := matchingEvents(s, seen[resource])
			if !ok || window <= 0 {
				restSeconds += s.Seconds
				continue
			}
			modelled[i] = n * min(s.Seconds/window, 1)
			modelledSum += modelled[i]
		}
		scale := 1.0
		if modelledSum > total.Events {
			scale = total.Events / modelledSum
		}
		for i, n := range modelled {
			add(byResource[resource][i].Identity, resource, n*scale, size)
		}
		rest := total.Events - modelledSum*scale
		if restSeconds == 0 {
			if rest > 0.5 {
				out.unattributed[resource] = watchTotal{Events: rest, Bytes: rest * size}
			}
			continue
		}
		for i, s := range byResource[resource] {
			if _, ok := modelled[i]; !ok {
				add(s.Identity, resource, rest*s.Seconds/restSeconds, size)
			}
		}
	}
	return out
}

// matchingEvents is how many of the events the harness saw of a resource
// a watch would have been sent over the whole window; false if the watch
// is not one the harness's count can tell (another namespace, a selector
// on other labels, a resource the harness did not watch).
func matchingEvents(s watchSpan, seen map[string]float64) (float64, bool) {
	if seen == nil || (s.Namespace != "" && s.Namespace != localcluster.Namespace) {
		return 0, false
	}
	sel, err := labels.Parse(s.Selector)
	if err != nil {
		return 0, false
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if !slices.Contains(selectorKeys, r.Key()) {
			return 0, false
		}
	}
	var n float64
	for set, count := range seen {
		ls, err := labels.ConvertSelectorToLabelsMap(set)
		if err != nil {
			return 0, false
		}
		if sel.Matches(ls) {
			n += count
		}
	}
	return n, true
}
