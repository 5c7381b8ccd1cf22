package metrics

import (
	"net/http"
	"strings"
)

// Verb names a request to an API server as the API server's own metrics
// do: get, list, watch, create, update, patch, delete, deletecollection
// for the API's resources, and "other" for the rest (health probes,
// discovery), so that reads for work tell apart from periodic ones.
func Verb(req *http.Request) string {
	parts, ok := resourcePath(req.URL.Path)
	if !ok {
		return "other"
	}
	// parts is resource[/name[/subresource]], namespaces taken off.
	named := len(parts) > 1
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			return "watch"
		case named:
			return "get"
		default:
			return "list"
		}
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return "other"
}

// resourcePath returns the segments of path after its group and version,
// without a namespaces/<ns> prefix, if path is a resource path: under /api/v1
// or /apis/<group>/<version>, with at least a resource.
func resourcePath(path string) ([]string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return nil, false
	}
	// namespaces/<ns>/<resource>...: the resource is what follows; a bare
	// namespaces or namespaces/<ns> is the namespaces resource itself.
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	return segs, len(segs) > 0 && segs[0] != ""
}
