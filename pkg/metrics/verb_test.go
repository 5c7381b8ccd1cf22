package metrics

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVerb(t *testing.T) {
	cases := map[string]struct {
		method, url string
		want        string
	}{
		"get a namespaced object":        {http.MethodGet, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/wl", "get"},
		"get a status subresource":       {http.MethodGet, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/tj/status", "get"},
		"list in a namespace":            {http.MethodGet, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads?labelSelector=a%3Db", "list"},
		"list cluster-wide":              {http.MethodGet, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues?limit=500", "list"},
		"watch":                          {http.MethodGet, "/apis/kueue.x-k8s.io/v1beta2/workloads?watch=true&resourceVersion=5", "watch"},
		"get a namespace":                {http.MethodGet, "/api/v1/namespaces/team-a", "get"},
		"list namespaces":                {http.MethodGet, "/api/v1/namespaces", "list"},
		"get a core object":              {http.MethodGet, "/api/v1/namespaces/team-a/secrets/s", "get"},
		"create":                         {http.MethodPost, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads", "create"},
		"update":                         {http.MethodPut, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/wl", "update"},
		"patch status":                   {http.MethodPatch, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/wl/status", "patch"},
		"delete":                         {http.MethodDelete, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/tj", "delete"},
		"delete a collection":            {http.MethodDelete, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs", "deletecollection"},
		"health probe":                   {http.MethodGet, "/readyz", "other"},
		"version":                        {http.MethodGet, "/version", "other"},
		"discovery of a group":           {http.MethodGet, "/apis/kueue.x-k8s.io/v1beta2", "other"},
		"discovery of all groups":        {http.MethodGet, "/apis", "other"},
		"a self-subject access review":   {http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "create"},
		"an unusual method on an object": {http.MethodOptions, "/api/v1/namespaces/team-a/pods/p", "other"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, Verb(&http.Request{Method: tc.method, URL: u})); diff != "" {
				t.Errorf("Verb(%s %s) (-want +got):\n%s", tc.method, tc.url, diff)
			}
		})
	}
}
