// Command tokenplugin is an exec credential plugin for the fleet
// integration tests, built by them. It hands out bound ServiceAccount
// tokens of the worker it is told about (Courier's ServiceAccount,
// courier-system/courier), each bound to a Secret of its own, and revokes
// those it handed out two runs before by deleting their Secrets, so that
// only a renewed token keeps working. It declares each token to expire
// after the seconds in its state folder's "lifetime" file, sooner than
// the API server would. Its state folder, named by the exec extension of
// the cluster it is told about ({"stateDir": ...}), holds the worker's
// admin kubeconfig and its "mode": serve (the default), refuse, garbage or
// hang. Each run appends a line to "runs", and writes its pid to "pid".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientauthenticationv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-inventory-api/pkg/credentialplugin"
)

const namespace, serviceAccount = "courier-system", "courier"

func main() {
	dir, err := stateDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	runs := appendRun(dir)
	_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	mode, _ := os.ReadFile(filepath.Join(dir, "mode"))
	switch strings.TrimSpace(string(mode)) {
	case "refuse":
		fmt.Fprintln(os.Stderr, "the token service refuses to hand out tokens")
		os.Exit(1)
	case "garbage":
		fmt.Println("<html>503 Service Unavailable</html>")
		return
	case "hang":
		time.Sleep(time.Hour)
		return
	}
	credentialplugin.Run(provider{dir: dir, run: runs})
}

// stateDir reads the state folder from the cluster's exec extension.
func stateDir() (string, error) {
	var ec clientauthenticationv1.ExecCredential
	if err := json.Unmarshal([]byte(os.Getenv("KUBERNETES_EXEC_INFO")), &ec); err != nil {
		return "", fmt.Errorf("reading KUBERNETES_EXEC_INFO: %w", err)
	}
	if ec.Spec.Cluster == nil || len(ec.Spec.Cluster.Config.Raw) == 0 {
		return "", errors.New("KUBERNETES_EXEC_INFO names no cluster with an exec extension")
	}
	var cfg struct {
		StateDir string `json:"stateDir"`
	}
	if err := json.Unmarshal(ec.Spec.Cluster.Config.Raw, &cfg); err != nil || cfg.StateDir == "" {
		return "", fmt.Errorf("the exec extension names no stateDir: %s", ec.Spec.Cluster.Config.Raw)
	}
	return cfg.StateDir, nil
}

func appendRun(dir string) int {
	f, err := os.OpenFile(filepath.Join(dir, "runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, _ = f.WriteString("run\n")
		_ = f.Close()
	}
	data, _ := os.ReadFile(filepath.Join(dir, "runs"))
	return strings.Count(string(data), "\n")
}

type provider struct {
	dir string
	run int
}

func (provider) Name() string { return "tokenplugin" }

// GetToken requests a token bound to a new Secret, and revokes the token
// of two runs before.
func (p provider) GetToken(ctx context.Context, in clientauthenticationv1.ExecCredential) (clientauthenticationv1.ExecCredentialStatus, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(p.dir, "admin.kubeconfig"))
	if err != nil {
		return clientauthenticationv1.ExecCredentialStatus{}, err
	}
	if cfg.Host != in.Spec.Cluster.Server {
		return clientauthenticationv1.ExecCredentialStatus{}, fmt.Errorf("told of cluster %s, but holds the keys of %s", in.Spec.Cluster.Server, cfg.Host)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clientauthenticationv1.ExecCredentialStatus{}, err
	}
	prefix := "credential-" + filepath.Base(p.dir) + "-"
	bound, err := cs.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: prefix + strconv.Itoa(p.run)}}, metav1.CreateOptions{})
	if err != nil {
		return clientauthenticationv1.ExecCredentialStatus{}, fmt.Errorf("creating the Secret to bind the token to: %w", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr(int64(600)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: bound.Name, UID: bound.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return clientauthenticationv1.ExecCredentialStatus{}, fmt.Errorf("requesting a token: %w", err)
	}
	if p.run > 2 {
		err := cs.CoreV1().Secrets(namespace).Delete(ctx, prefix+strconv.Itoa(p.run-2), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return clientauthenticationv1.ExecCredentialStatus{}, fmt.Errorf("revoking an old token: %w", err)
		}
	}
	lifetime := 600
	if data, err := os.ReadFile(filepath.Join(p.dir, "lifetime")); err == nil {
		if lifetime, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return clientauthenticationv1.ExecCredentialStatus{}, fmt.Errorf("reading the lifetime: %w", err)
		}
	}
	expires := metav1.NewTime(time.Now().Add(time.Duration(lifetime) * time.Second))
	return clientauthenticationv1.ExecCredentialStatus{Token: tr.Status.Token, ExpirationTimestamp: &expires}, nil
}

func ptr[T any](v T) *T { return &v }
