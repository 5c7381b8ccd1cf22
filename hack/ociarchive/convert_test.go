package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// dockerArchive is what docker save writes for a two-layer image.
func dockerArchive(t *testing.T, diffIDs ...string) ([]byte, [][]byte, []byte) {
	t.Helper()
	layers := [][]byte{[]byte("layer one"), []byte("layer two")}
	if diffIDs == nil {
		diffIDs = []string{digest(layers[0]), digest(layers[1])}
	}
	config, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs}})
	manifestJSON, _ := json.Marshal([]dockerManifest{{Config: "abc.json", RepoTags: []string{"courier:v0.1.0"}, Layers: []string{"l1/layer.tar", "l2/layer.tar"}}})
	archive, err := writeTar(map[string][]byte{"manifest.json": manifestJSON, "abc.json": config, "l1/layer.tar": layers[0], "l2/layer.tar": layers[1], "repositories": []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	return archive, layers, config
}

func TestConvert(t *testing.T) {
	archive, layers, config := dockerArchive(t)
	out, err := convert(archive, "registry.example.com/courier:v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	files, err := readTar(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(idx.Manifests))
	}
	wantAnnotations := map[string]string{"org.opencontainers.image.ref.name": "v0.1.0", "io.containerd.image.name": "registry.example.com/courier:v0.1.0"}
	if diff := cmp.Diff(wantAnnotations, idx.Manifests[0].Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	blob := func(d string) []byte {
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")]
		if !ok || digest(data) != d {
			t.Fatalf("blob %s missing or not matching its digest", d)
		}
		return data
	}
	var m manifest
	if err := json.Unmarshal(blob(idx.Manifests[0].Digest), &m); err != nil {
		t.Fatal(err)
	}
	want := manifest{SchemaVersion: 2, MediaType: mediaTypeManifest,
		Config: descriptor{MediaType: mediaTypeConfig, Digest: digest(config), Size: int64(len(config))},
		Layers: []descriptor{
			{MediaType: mediaTypeLayer, Digest: digest(layers[0]), Size: int64(len(layers[0]))},
			{MediaType: mediaTypeLayer, Digest: digest(layers[1]), Size: int64(len(layers[1]))},
		}}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	for _, l := range m.Layers {
		blob(l.Digest)
	}
	if again, _ := convert(archive, "registry.example.com/courier:v0.1.0"); string(again) != string(out) {
		t.Error("converting the same archive twice gave two archives")
	}
	if passed, _ := convert(out, "ignored:x"); string(passed) != string(out) {
		t.Error("an OCI archive was not passed through as it is")
	}
}

func TestConvertRefuses(t *testing.T) {
	cases := map[string]struct {
		archive func(t *testing.T) []byte
		name    string
		want    string
	}{
		"layers that are not the config's": {
			archive: func(t *testing.T) []byte { a, _, _ := dockerArchive(t, "sha256:00", "sha256:11"); return a },
			name:    "courier:v1", want: "are not the config's diff_ids",
		},
		"a name without a tag": {
			archive: func(t *testing.T) []byte { a, _, _ := dockerArchive(t); return a },
			name:    "registry:5000/courier", want: `image name "registry:5000/courier" has no tag`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := convert(tc.archive(t), tc.name)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("convert() error = %v, want %q", err, tc.want)
			}
		})
	}
}
