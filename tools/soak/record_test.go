package soak

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	courier "github.com/courierdev/courier/api/v1alpha1"
	batchtesting "github.com/courierdev/courier/pkg/testing/batch"
	"github.com/courierdev/courier/tools/localcluster"
)

func TestWorkerCopyStatus(t *testing.T) {
	copyOf := func(complete, deleting bool) *batchv1.Job {
		j := batchtesting.MakeJob("soak-x-0003", "team-a").Label(courier.OriginLabel, "manager").Obj()
		j.UID = "u-1"
		j.Status.Active, j.Status.Ready = 1, ptr.To[int32](1)
		if complete {
			j.Status.Active, j.Status.Ready, j.Status.Succeeded = 0, ptr.To[int32](0), 1
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}
		if deleting {
			j.DeletionTimestamp = &metav1.Time{Time: at(5)}
		}
		return j
	}
	// createdAt2 dates a copy's creation as the API server does.
	createdAt2 := func(j *batchv1.Job) *batchv1.Job {
		j.CreationTimestamp = metav1.Time{Time: at(2)}
		return j
	}
	type seen struct {
		job *batchv1.Job
		d   localcluster.Delivery
		at  time.Time
	}
	cases := map[string]struct {
		seen []seen
		want Copy
	}{
		"the last version before deletion began": {
			seen: []seen{{job: copyOf(false, false), at: at(1)}, {job: copyOf(true, false), at: at(4)}, {job: copyOf(true, true), at: at(5)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(1), Started: at(1), Ended: at(4), Deleted: at(5), Status: statusSummary(copyOf(true, false))},
		},
		"an end first seen as the copy goes, after its watch was down": {
			seen: []seen{{job: copyOf(false, false), at: at(1)}, {job: copyOf(true, true), at: at(5)}, {job: copyOf(true, true), d: localcluster.Deleted, at: at(6)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(1), Started: at(1), Ended: at(5), Deleted: at(5), Status: statusSummary(copyOf(true, false))},
		},
		"a running copy deleted keeps what it showed before": {
			seen: []seen{{job: copyOf(false, false), at: at(1)}, {job: copyOf(false, true), at: at(5)}, {job: copyOf(false, true), d: localcluster.Deleted, at: at(6)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(1), Started: at(1), Deleted: at(5), Status: statusSummary(copyOf(false, false))},
		},
		"gone while its watch was down, last seen running": {
			seen: []seen{{job: copyOf(false, false), at: at(1)}, {job: copyOf(false, false), d: localcluster.DeletedUnwatched, at: at(9)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(1), Started: at(1), Deleted: at(9), Status: statusSummary(copyOf(false, false)), StatusUnseen: true},
		},
		"made while its watch was down: dated by the API server": {
			seen: []seen{{job: createdAt2(copyOf(false, false)), at: at(9)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(2), Started: at(9), Status: statusSummary(copyOf(false, false))},
		},
		"seen within a second of the API server's date: dated when seen": {
			seen: []seen{{job: createdAt2(copyOf(false, false)), at: at(2).Add(900 * time.Millisecond)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(2).Add(900 * time.Millisecond), Started: at(2).Add(900 * time.Millisecond), Status: statusSummary(copyOf(false, false))},
		},
		"gone while its watch was down, seen ended before": {
			seen: []seen{{job: copyOf(false, false), at: at(1)}, {job: copyOf(true, false), at: at(4)}, {job: copyOf(true, false), d: localcluster.DeletedUnwatched, at: at(9)}},
			want: Copy{Worker: "w3", UID: "u-1", Created: at(1), Started: at(1), Ended: at(4), Deleted: at(9), Status: statusSummary(copyOf(true, false))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRecorder()
			r.expect(JobSpec{Name: "soak-x-0003"})
			for _, s := range tc.seen {
				r.workerCopy("w3", s.job, s.d, s.at)
			}
			copies := r.jobs["soak-x-0003"].Copies
			if len(copies) != 1 {
				t.Fatalf("recorded %d copies, want 1", len(copies))
			}
			if diff := cmp.Diff(tc.want, *copies[0]); diff != "" {
				t.Errorf("copy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkerPod(t *testing.T) {
	// pod builds a pod of job j in phase, its container running from
	// started, or terminated at finished, as kwok dates them (seconds).
	pod := func(phase corev1.PodPhase, started, finished time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-pod", UID: "p-1",
			Labels: map[string]string{batchv1.JobNameLabel: "j"}, CreationTimestamp: metav1.Time{Time: at(0)}}}
		p.Status.Phase = phase
		switch {
		case !finished.IsZero():
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.Time{Time: started}, FinishedAt: metav1.Time{Time: finished}}}}}
		case !started.IsZero():
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
				Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: started}}}}}
		}
		return p
	}
	deleting := func(p *corev1.Pod) *corev1.Pod {
		p.DeletionTimestamp = &metav1.Time{Time: at(40)}
		return p
	}
	type seen struct {
		pod     *corev1.Pod
		deleted bool
		at      time.Time
	}
	var zero time.Time
	cases := map[string]struct {
		seen []seen
		want PodRun
	}{
		"seen as it goes": {
			seen: []seen{{pod: pod(corev1.PodPending, zero, zero), at: at(1)}, {pod: pod(corev1.PodRunning, at(2), zero), at: at(2).Add(300 * time.Millisecond)},
				{pod: pod(corev1.PodSucceeded, at(2), at(9)), at: at(9).Add(200 * time.Millisecond)}},
			want: PodRun{Running: at(2).Add(300 * time.Millisecond), Ended: at(9).Add(200 * time.Millisecond), Outcome: "Succeeded"},
		},
		"seen running late: the worker dates the start": {
			seen: []seen{{pod: pod(corev1.PodRunning, at(2), zero), at: at(8)}},
			want: PodRun{Running: at(2)},
		},
		"seen ended late: the worker dates the end": {
			seen: []seen{{pod: pod(corev1.PodRunning, at(2), zero), at: at(2)}, {pod: pod(corev1.PodFailed, at(2), at(9)), at: at(20)}},
			want: PodRun{Running: at(2), Ended: at(9), Outcome: "Failed"},
		},
		"first seen ended: its containers date the run": {
			seen: []seen{{pod: pod(corev1.PodSucceeded, at(2), at(9)), at: at(20)}},
			want: PodRun{Running: at(2), Ended: at(9), Outcome: "Succeeded"},
		},
		"deleted while running": {
			seen: []seen{{pod: pod(corev1.PodRunning, at(2), zero), at: at(2)}, {pod: deleting(pod(corev1.PodRunning, at(2), zero)), at: at(30)},
				{pod: deleting(pod(corev1.PodRunning, at(2), zero)), deleted: true, at: at(31)}},
			want: PodRun{Running: at(2), Ended: at(30), Outcome: "Deleted"},
		},
		"deleted before it ran": {
			seen: []seen{{pod: pod(corev1.PodPending, zero, zero), at: at(1)}, {pod: pod(corev1.PodPending, zero, zero), deleted: true, at: at(5)}},
			want: PodRun{Ended: at(5), Outcome: "Deleted"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRecorder()
			r.expect(JobSpec{Name: "j"})
			for _, s := range tc.seen {
				r.workerPod("w1", s.pod, s.deleted, s.at)
			}
			pods := r.jobs["j"].Pods
			if len(pods) != 1 {
				t.Fatalf("recorded %d pods, want 1", len(pods))
			}
			tc.want.Worker, tc.want.Pod, tc.want.UID, tc.want.Created = "w1", "j-pod", "p-1", at(0)
			if diff := cmp.Diff(tc.want, *pods[0]); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
		})
	}
}
