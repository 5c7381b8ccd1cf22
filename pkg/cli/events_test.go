package cli

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLastEvents(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_000_000+int64(s), 0).UTC() }
	on := func(kind, name, reason string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeNormal, Reason: reason, Message: reason + "."}
	}
	core := on("TrainJob", "tj", "Created")
	core.LastTimestamp = metav1.NewTime(at(1))
	newAPI := on("Workload", "w", "Nominated")
	newAPI.EventTime = metav1.NewMicroTime(at(3))
	repeated := on("Workload", "w", "Dispatched")
	repeated.EventTime = metav1.NewMicroTime(at(2))
	repeated.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(at(5))}
	created := on("Workload", "w", "Old")
	created.CreationTimestamp = metav1.NewTime(at(0))

	cases := map[string]struct {
		n    int
		want []string
	}{
		"all, oldest first": {n: 10, want: []string{"Old", "Created", "Nominated", "Dispatched"}},
		"the last two":      {n: 2, want: []string{"Nominated", "Dispatched"}},
		"none":              {n: 0, want: []string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := []string{}
			for _, e := range lastEvents([]corev1.Event{newAPI, core, repeated, created}, tc.n) {
				got = append(got, e.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
