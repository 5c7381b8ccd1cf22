// Package config loads, defaults and validates Courier's configuration file.
package config

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	if err := configv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

// Load reads the Configuration at path, defaults it and validates it. An
// empty path yields the defaults. A namespace left out is the one in
// POD_NAMESPACE, if set: the pod's. Errors name the file and every invalid
// field.
func Load(path string) (*configv1alpha1.Configuration, error) {
	cfg := &configv1alpha1.Configuration{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading configuration: %w", err)
		}
		if cfg, err = Decode(data); err != nil {
			return nil, fmt.Errorf("decoding configuration %s: %w", path, err)
		}
	}
	if cfg.Namespace == "" {
		cfg.Namespace = os.Getenv(configv1alpha1.NamespaceEnv)
	}
	configv1alpha1.SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration %s: %w", describe(path), errs.ToAggregate())
	}
	return cfg, nil
}

// Decode parses a Configuration strictly: unknown fields, duplicate fields,
// or another apiVersion or kind are errors.
func Decode(data []byte) (*configv1alpha1.Configuration, error) {
	cfg := &configv1alpha1.Configuration{}
	obj, gvk, err := codecs.UniversalDecoder(configv1alpha1.GroupVersion).Decode(data, nil, cfg)
	if err != nil {
		return nil, err
	}
	if obj != cfg {
		return nil, fmt.Errorf("expected %s Configuration, got %s", configv1alpha1.GroupVersion, gvk)
	}
	return cfg, nil
}

func describe(path string) string {
	if path == "" {
		return "(defaults)"
	}
	return path
}
