// Package release checks what `make release` writes (hack/release.sh):
// every file there, the checksums, the chart linting and rendering with
// the release's image, the install YAML, the krew manifest naming each
// plugin archive by its checksum, the plugin reporting the release's
// version, and the image archive wherever a Docker engine runs.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/courierdev/courier/test/integration/framework"
)

// release is a release folder and how it was made.
type release struct {
	root, dir, version, repository string
}

// The platforms of the plugin, as GOOS/GOARCH.
var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// setUp returns the release `make release` wrote (COURIER_RELEASE_DIR and
// COURIER_RELEASE_VERSION) or, without one, writes one with
// hack/release.sh, as make release does.
func setUp(t *testing.T) release {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := release{root: root, dir: os.Getenv("COURIER_RELEASE_DIR"), version: os.Getenv("COURIER_RELEASE_VERSION"), repository: os.Getenv("IMAGE_REPOSITORY")}
	if r.repository == "" {
		r.repository = "courier"
	}
	if r.dir != "" {
		return r
	}
	r.dir, r.version, r.repository = t.TempDir(), "v0.0.0-test.1", "registry.example.com/courier"
	cmd := exec.Command(filepath.Join(root, "hack", "release.sh"), r.version, r.dir)
	cmd.Env = append(os.Environ(), "IMAGE_REPOSITORY="+r.repository)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", err, out)
	}
	return r
}

func (r release) chartVersion() string { return strings.TrimPrefix(r.version, "v") }

func (r release) image() string { return r.repository + ":" + r.version }

func (r release) imageArchive() string {
	return "courier-image_" + r.version + "_linux_amd64.tar"
}

func (r release) pluginArchive(platform string) string {
	return "kubectl-courier_" + r.version + "_" + strings.ReplaceAll(platform, "/", "_") + ".tar.gz"
}

func TestRelease(t *testing.T) {
	r := setUp(t)
	sums := checkFilesAndSums(t, r)
	t.Run("chart", func(t *testing.T) { checkChart(t, r) })
	t.Run("install YAML", func(t *testing.T) { checkInstallYAML(t, r) })
	t.Run("krew manifest", func(t *testing.T) { checkKrew(t, r, sums) })
	t.Run("plugin archives", func(t *testing.T) { checkPlugins(t, r) })
	t.Run("image archive", func(t *testing.T) { checkImage(t, r) })
}

// checkFilesAndSums requires exactly the release's files, and SHA256SUMS
// to hold the checksum of each; it returns them by file.
func checkFilesAndSums(t *testing.T, r release) map[string]string {
	t.Helper()
	want := []string{"SHA256SUMS", "courier-" + r.chartVersion() + ".tgz", "courier.yaml", "kubectl-courier.yaml"}
	for _, p := range platforms {
		want = append(want, r.pluginArchive(p))
	}
	if dockerRuns() {
		want = append(want, r.imageArchive())
	}
	slices.Sort(want)
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("files in %s (-want +got):\n%s", r.dir, diff)
	}
	data, err := os.ReadFile(filepath.Join(r.dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's", line)
		}
		sums[file] = sum
	}
	for _, file := range want {
		if file == "SHA256SUMS" {
			continue
		}
		if got, want := sums[file], sha256Of(t, filepath.Join(r.dir, file)); got != want {
			t.Errorf("SHA256SUMS says %s for %s, which is %s", got, file, want)
		}
	}
	if len(sums) != len(want)-1 {
		t.Errorf("SHA256SUMS lists %d files, want %d: %v", len(sums), len(want)-1, sums)
	}
	return sums
}

// checkChart lints the packaged chart and renders it: its version, and
// the release's image by default.
func checkChart(t *testing.T, r release) {
	chart := filepath.Join(r.dir, "courier-"+r.chartVersion()+".tgz")
	if out, err := r.tool("helm", "lint", "--strict", chart); err != nil {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
	out, err := r.tool("helm", "show", "chart", chart)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(out, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != r.chartVersion() || meta.AppVersion != r.version {
		t.Errorf("Chart.yaml version %q, appVersion %q; want %q, %q", meta.Version, meta.AppVersion, r.chartVersion(), r.version)
	}
	out, err = r.tool("helm", "template", "courier", chart, "--namespace", "courier-system")
	if err != nil {
		t.Fatal(err)
	}
	if got := deploymentImage(t, out); got != r.image() {
		t.Errorf("the chart runs %q, want the release's %q", got, r.image())
	}
	if out, err := r.tool("helm", "show", "readme", chart); err != nil || !bytes.Contains(out, []byte("| `metrics.secureServing` |")) {
		t.Errorf("the chart's README is missing or lacks its values (%v)", err)
	}
}

// checkInstallYAML requires config/default rendered with the release's image.
func checkInstallYAML(t *testing.T, r release) {
	data, err := os.ReadFile(filepath.Join(r.dir, "courier.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := deploymentImage(t, data); got != r.image() {
		t.Errorf("courier.yaml runs %q, want the release's %q", got, r.image())
	}
	objs, err := framework.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, obj := range objs {
		kinds[obj.GetKind()]++
	}
	for _, kind := range []string{"CustomResourceDefinition", "Namespace", "ClusterRole", "Role", "ServiceAccount", "ConfigMap", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if kinds[kind] == 0 {
			t.Errorf("courier.yaml has no %s: %v", kind, kinds)
		}
	}
}

// krewPlugin is what the krew manifest must hold.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// checkKrew parses the krew manifest strictly and requires one platform
// per archive, named by its URI and its checksum.
func checkKrew(t *testing.T, r release, sums map[string]string) {
	data, err := os.ReadFile(filepath.Join(r.dir, "kubectl-courier.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("the krew manifest does not parse: %v", err)
	}
	gv, err := schema.ParseGroupVersion(p.APIVersion)
	if err != nil || gv.Group != "krew.googlecontainertools.github.com" || p.Kind != "Plugin" {
		t.Errorf("the krew manifest is a %s %s, want a krew Plugin", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name != "courier" || p.Spec.Version != r.version || p.Spec.ShortDescription == "" || p.Spec.Homepage == "" {
		t.Errorf("krew plugin %q version %q (short description %q, homepage %q); want courier %s with both", p.Metadata.Name, p.Spec.Version, p.Spec.ShortDescription, p.Spec.Homepage, r.version)
	}
	var got []string
	for _, pl := range p.Spec.Platforms {
		platform := pl.Selector.MatchLabels["os"] + "/" + pl.Selector.MatchLabels["arch"]
		got = append(got, platform)
		archive := r.pluginArchive(platform)
		if !strings.HasSuffix(pl.URI, "/"+r.version+"/"+archive) {
			t.Errorf("%s: uri %s does not name %s of release %s", platform, pl.URI, archive, r.version)
		}
		if pl.SHA256 != sums[archive] {
			t.Errorf("%s: sha256 %s, but %s is %s", platform, pl.SHA256, archive, sums[archive])
		}
		if pl.Bin != "kubectl-courier" || len(pl.Files) != 2 {
			t.Errorf("%s: bin %q, files %v; want kubectl-courier and its LICENSE", platform, pl.Bin, pl.Files)
		}
	}
	if diff := cmp.Diff(platforms, got); diff != "" {
		t.Errorf("krew platforms (-want +got):\n%s", diff)
	}
}

// checkPlugins opens each archive: the binary and the licence, the binary
// built for its platform; the one for this machine reports the release.
func checkPlugins(t *testing.T, r release) {
	for _, platform := range platforms {
		files := untar(t, filepath.Join(r.dir, r.pluginArchive(platform)))
		if _, ok := files["LICENSE"]; !ok {
			t.Errorf("%s: no LICENSE in the archive", platform)
		}
		bin, ok := files["kubectl-courier"]
		if !ok {
			t.Errorf("%s: no kubectl-courier in the archive", platform)
			continue
		}
		if !bytes.Contains(bin, []byte(r.version)) {
			t.Errorf("%s: the binary does not carry version %s", platform, r.version)
		}
		if platform != runtime.GOOS+"/"+runtime.GOARCH {
			continue
		}
		path := filepath.Join(t.TempDir(), "kubectl-courier")
		if err := os.WriteFile(path, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl-courier version: %v", err)
		}
		var v struct {
			ClientVersion struct{ Version, Revision string } `json:"clientVersion"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("kubectl-courier version -o json: %v\n%s", err, out)
		}
		if v.ClientVersion.Version != r.version || len(strings.TrimSuffix(v.ClientVersion.Revision, "-dirty")) != 40 {
			t.Errorf("kubectl-courier reports version %q, revision %q; want %s and a commit", v.ClientVersion.Version, v.ClientVersion.Revision, r.version)
		}
	}
}

// checkImage requires, where a Docker engine runs, an OCI archive of the
// image tagged with the release; where none does, hack/release.sh skips
// only it (checkFilesAndSums holds the other files to be there).
func checkImage(t *testing.T, r release) {
	path := filepath.Join(r.dir, r.imageArchive())
	if !dockerRuns() {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("no Docker engine runs, yet %s exists", path)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	files := readTar(t, f)
	if _, ok := files["oci-layout"]; !ok {
		t.Fatalf("%s is not an OCI archive: no oci-layout", path)
	}
	type descriptor struct {
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	}
	// blob reads a blob, which must match its digest.
	blob := func(d descriptor) []byte {
		t.Helper()
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		sum := sha256.Sum256(data)
		if !ok || "sha256:"+hex.EncodeToString(sum[:]) != d.Digest {
			t.Fatalf("blob %s is missing or does not match its digest", d.Digest)
		}
		return data
	}
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests, want 1", err, len(index.Manifests))
	}
	if got := index.Manifests[0].Annotations["io.containerd.image.name"]; got != r.image() {
		t.Errorf("the archive's index names %q, want %s", got, r.image())
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(index.Manifests[0]), &manifest); err != nil {
		t.Fatal(err)
	}
	for _, l := range manifest.Layers {
		blob(l)
	}
	var config struct {
		Architecture, OS string
		Config           struct {
			User       string
			Entrypoint []string
		}
	}
	if err := json.Unmarshal(blob(manifest.Config), &config); err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || config.Architecture != "amd64" || config.Config.User != "65532:65532" || !slices.Equal(config.Config.Entrypoint, []string{"/courier"}) {
		t.Errorf("image config: %s/%s, user %q, entrypoint %v; want linux/amd64, 65532:65532, [/courier]", config.OS, config.Architecture, config.Config.User, config.Config.Entrypoint)
	}
}

func (r release) tool(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(r.root, "bin", name), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %v: %w: %s", name, args, err, stderr.String())
	}
	return out, nil
}

// dockerRuns is whether a Docker engine answers, as hack/release.sh asks.
func dockerRuns() bool {
	return exec.Command("docker", "info").Run() == nil
}

func deploymentImage(t *testing.T, manifests []byte) string {
	t.Helper()
	objs, err := framework.DecodeManifests(manifests)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(data, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	t.Fatal("no Deployment")
	return ""
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return readTar(t, gz)
}

func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "./")] = data
	}
}
