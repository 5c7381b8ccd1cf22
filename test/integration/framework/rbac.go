package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/courierdev/courier/api/config/v1alpha1"
	"github.com/courierdev/courier/pkg/config"
)

// Courier's shipped RBAC, relative to the repository root: what the chart
// grants on the manager, and what a worker's kubeconfig user gets.
const (
	ManagerRBAC = "config/rbac/role.yaml"
	WorkerRBAC  = "config/worker/rbac.yaml"
)

// fieldOwner is the field manager of what the framework applies.
const fieldOwner = client.FieldOwner("courier-test")

// ReadManifests reads the objects of a multi-document YAML file, skipping
// empty documents.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	return DecodeManifests(data)
}

// DecodeManifests splits multi-document YAML into objects, skipping empty
// documents (Helm leaves some).
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading a YAML document: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, fmt.Errorf("decoding a YAML document: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// Apply server-side applies objs in order.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append([]client.ApplyOption{fieldOwner, client.ForceOwnership}, opts...)
	for _, obj := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}

// grantCourier gives CourierUser the ClusterRoles of a shipped RBAC file,
// its Roles in namespace (Courier's; "" keeps each Role's own, whose
// Namespace the file creates), and a ClusterRole
// "courier-frameworks" with extra rules, as a platform engineer would for
// the external frameworks.
func (c *Cluster) grantCourier(ctx context.Context, root, file, namespace string, extra []rbacv1.PolicyRule) error {
	objs, err := ReadManifests(filepath.Join(root, file))
	if err != nil {
		return err
	}
	var roles []*rbacv1.ClusterRole
	var apply []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" && namespace == "" {
			apply = append(apply, obj)
			continue
		}
		if obj.GetKind() == "Role" {
			in := namespace
			if in == "" {
				in = obj.GetNamespace()
			}
			namespaced, err := namespacedGrant(obj, in)
			if err != nil {
				return fmt.Errorf("granting Role %s of %s: %w", obj.GetName(), file, err)
			}
			apply = append(apply, namespaced...)
			continue
		}
		if obj.GetKind() != "ClusterRole" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role); err != nil {
			return fmt.Errorf("decoding ClusterRole %s of %s: %w", obj.GetName(), file, err)
		}
		roles = append(roles, role)
	}
	if len(roles) == 0 {
		return fmt.Errorf("%s has no ClusterRole", file)
	}
	if len(extra) > 0 {
		roles = append(roles, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "courier-frameworks"}, Rules: extra})
	}
	for _, role := range roles {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: CourierUser}},
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Rules: role.Rules}
		for kind, obj := range map[string]runtime.Object{"ClusterRole": role, "ClusterRoleBinding": binding} {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return fmt.Errorf("converting %s %s: %w", kind, role.Name, err)
			}
			o := &unstructured.Unstructured{Object: u}
			o.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind(kind))
			apply = append(apply, o)
		}
	}
	if err := Apply(ctx, c.Client, apply); err != nil {
		return fmt.Errorf("granting Courier its RBAC on %s: %w", c.Name, err)
	}
	return nil
}

// namespacedGrant is a shipped Role moved into namespace and a RoleBinding
// of it to CourierUser there.
func namespacedGrant(obj *unstructured.Unstructured, namespace string) ([]*unstructured.Unstructured, error) {
	if namespace == "" {
		return nil, errors.New("no namespace to grant a Role in")
	}
	role := obj.DeepCopy()
	role.SetNamespace(namespace)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.GetName(), Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.GetName()},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: CourierUser}},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(binding)
	if err != nil {
		return nil, fmt.Errorf("converting RoleBinding: %w", err)
	}
	b := &unstructured.Unstructured{Object: u}
	b.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"))
	return []*unstructured.Unstructured{role, b}, nil
}

// frameworkRules are the rules docs/external-frameworks.md asks for, for
// the external frameworks that cfg lists and the manager serves: on the
// manager, read the kind and patch its status subresource, or the kind if
// it has none; on a worker, manage it.
func (e *Environment) frameworkRules(ctx context.Context, cfg *configv1alpha1.Configuration) (manager, worker []rbacv1.PolicyRule, err error) {
	for _, f := range cfg.ExternalFrameworks {
		gvk, err := config.ParseFrameworkName(f.Name)
		if err != nil {
			return nil, nil, err
		}
		mapping, err := e.Manager.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			// Not served on the manager: Courier reports it and never asks.
			continue
		}
		group, resource := []string{gvk.Group}, mapping.Resource.Resource
		status := resource + "/status"
		hasStatus, err := e.hasStatusSubresource(ctx, mapping.Resource.GroupResource().String(), gvk.Version)
		if err != nil {
			return nil, nil, err
		}
		if !hasStatus {
			status = resource
		}
		manager = append(manager,
			rbacv1.PolicyRule{APIGroups: group, Resources: []string{resource}, Verbs: []string{"get", "list", "watch"}},
			rbacv1.PolicyRule{APIGroups: group, Resources: []string{status}, Verbs: []string{"patch"}})
		worker = append(worker,
			rbacv1.PolicyRule{APIGroups: group, Resources: []string{resource}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}})
	}
	return manager, worker, nil
}

// hasStatusSubresource reports whether the manager's CRD of a resource
// ("plural.group") has a status subresource at version. Built-in kinds,
// which have no CRD, are taken to have one.
func (e *Environment) hasStatusSubresource(ctx context.Context, name, version string) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.Manager.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Subresources != nil && v.Subresources.Status != nil, nil
		}
	}
	return false, fmt.Errorf("CRD %s has no version %s", name, version)
}
