package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Media types of the OCI image specification, v1.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// dockerManifest is one image of the manifest.json of `docker save`.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// convert turns a docker save archive of one image into an OCI image
// layout archive whose index names the image: by its tag
// (org.opencontainers.image.ref.name) and its full name
// (io.containerd.image.name), as Docker and containerd do.
func convert(archive []byte, name string) ([]byte, error) {
	files, err := readTar(archive)
	if err != nil {
		return nil, err
	}
	if _, ok := files["oci-layout"]; ok {
		return archive, nil
	}
	var images []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &images); err != nil {
		return nil, fmt.Errorf("reading the archive's manifest.json: %w", err)
	}
	if len(images) != 1 {
		return nil, fmt.Errorf("the archive holds %d images, want 1", len(images))
	}
	img := images[0]
	blobs := map[string][]byte{}
	add := func(mediaType string, data []byte) descriptor {
		sum := sha256.Sum256(data)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		blobs[digest] = data
		return descriptor{MediaType: mediaType, Digest: digest, Size: int64(len(data))}
	}
	config, ok := files[img.Config]
	if !ok {
		return nil, fmt.Errorf("the archive lacks its image config %s", img.Config)
	}
	m := manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: add(mediaTypeConfig, config)}
	var diffIDs struct {
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(config, &diffIDs); err != nil {
		return nil, fmt.Errorf("reading the image config: %w", err)
	}
	for _, path := range img.Layers {
		layer, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("the archive lacks layer %s", path)
		}
		m.Layers = append(m.Layers, add(mediaTypeLayer, layer))
	}
	// Uncompressed layers are their own diff IDs: a mismatch is a broken
	// archive, not one to pass on.
	var got []string
	for _, l := range m.Layers {
		got = append(got, l.Digest)
	}
	if !slices.Equal(got, diffIDs.RootFS.DiffIDs) {
		return nil, fmt.Errorf("the layers' digests %v are not the config's diff_ids %v", got, diffIDs.RootFS.DiffIDs)
	}
	manifestJSON, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	desc := add(mediaTypeManifest, manifestJSON)
	tag := name[strings.LastIndex(name, ":")+1:]
	if !strings.Contains(name, ":") || strings.Contains(tag, "/") {
		return nil, fmt.Errorf("image name %q has no tag", name)
	}
	desc.Annotations = map[string]string{"org.opencontainers.image.ref.name": tag, "io.containerd.image.name": name}
	indexJSON, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{desc}})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": indexJSON}
	for digest, data := range blobs {
		out["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")] = data
	}
	return writeTar(out)
}

func readTar(data []byte) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the archive: %w", h.Name, err)
		}
		files[h.Name] = b
	}
}

// writeTar writes files in name order with fixed times and owners, so
// that one image makes one archive.
func writeTar(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Size: int64(len(files[name])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
