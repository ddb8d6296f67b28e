// Command kusion-module-echo is a Kusion module for the tests of package
// module: it turns the request into a ConfigMap and a patcher, and fails on
// demand, so the tests can check what crosses the protocol. A platform
// config naming dumpEnvTo has it write its environment to that file, one
// variable a line, so tests can check what a module sees of its host's.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

type echo struct {
	logger *slog.Logger
}

func (e echo) Generate(ctx context.Context, req module.Request) (*module.Response, error) {
	// Written to stderr: the host must log it, not show it.
	e.logger.InfoContext(ctx, "generating", "app", req.App)
	if req.App == "fail" {
		return nil, errors.New("app \"fail\" is not allowed by this module")
	}
	var data map[string]string
	if err := yaml.Unmarshal(req.PlatformConfig, &data); err != nil {
		return nil, fmt.Errorf("decoding platform config: %w", err)
	}
	if dump := data["dumpEnvTo"]; dump != "" {
		delete(data, "dumpEnvTo")
		if err := os.WriteFile(dump, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("dumping the environment: %w", err)
		}
	}
	cm := model.Resource{
		ID:   model.KubernetesIDOf("v1", "ConfigMap", req.Project, req.App+"-echo"),
		Type: model.Kubernetes,
		Attributes: map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": req.App + "-echo", "namespace": req.Project},
			"data":       data,
		},
		DependsOn: []string{model.KubernetesIDOf("v1", "Namespace", "", req.Project)},
	}
	return &module.Response{
		Resources: model.Resources{cm},
		Patcher: &module.Patcher{
			Environments: []corev1.EnvVar{{Name: "ECHO_STACK", Value: req.Stack}},
			Labels:       map[string]string{"echo.kusionpr.io/app": req.App},
			JSONPatchers: map[string]module.JSONPatcher{
				cm.ID: {Type: module.MergePatch, Payload: []byte(`{"data":{"patched":"yes"}}`)},
			},
		},
	}, nil
}

func main() {
	module.Serve(echo{logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
}
