// Package kubejob runs a stack's request as a Kubernetes Job: the bot
// creates the Job (named after the request, so that two bots, or a
// redelivery, make it once), the Job's container runs the action binary's
// execute mode with the workspace's ServiceAccount and the store's
// credentials only, and the bot reads the result the Job left in the
// release store. The bot itself then never runs Terraform nor reaches the
// stacks' clusters.
package kubejob

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Settings are the operator's say on the Jobs of a workspace. A field left
// empty in a workspace's settings is the defaults'.
type Settings struct {
	// Namespace the Jobs are made in.
	Namespace string `json:"namespace,omitempty"`
	// ServiceAccount the Jobs run as: what they may do in the cluster, so
	// least privilege per environment (dev's cannot touch prod).
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// Resources, NodeSelector and Tolerations place and size the Job's pod.
	Resources    corev1.ResourceRequirements `json:"resources,omitzero"`
	NodeSelector map[string]string           `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration         `json:"tolerations,omitempty"`
	// Env and EnvFrom are all of the environment the worker gets besides
	// HOME: the store's credentials (from a Secret), the Terraform
	// providers' settings. Nothing of the bot's own environment is passed.
	Env     []corev1.EnvVar        `json:"env,omitempty"`
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// Args are flags of the worker's (action execute --help), such as
	// --terraform-providers.
	Args []string `json:"args,omitempty"`
	// Timeout bounds a Job's run (default 1h): past it Kubernetes stops it
	// and the bot reports it timed out.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// TTL is how long a finished Job stays for people to look at (default
	// 24h).
	TTL *metav1.Duration `json:"ttl,omitempty"`
}

// Config is how the bot runs Jobs.
type Config struct {
	// Image is this project's image, which holds the action binary.
	Image string `json:"image"`
	// Kubeconfig is how the bot reaches the cluster the Jobs run in
	// (default: the bot pod's ServiceAccount).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Settings are every workspace's defaults.
	Settings `json:",inline"`
	// Workspaces are the settings of each workspace over the defaults.
	Workspaces map[string]Settings `json:"workspaces,omitempty"`
	// Untrusted are the settings of the previews of pull requests from
	// forks, over the workspace's: they read only the prior release, so
	// a ServiceAccount that may do nothing is enough.
	Untrusted *Settings `json:"untrusted,omitempty"`
}

const (
	defaultTimeout = time.Hour
	defaultTTL     = 24 * time.Hour
)

// For is the settings of the Jobs of workspace; untrusted, of a fork's
// preview.
func (c Config) For(workspace string, untrusted bool) Settings {
	s := c.Settings
	if w, ok := c.Workspaces[workspace]; ok {
		s = s.over(w)
	}
	if untrusted && c.Untrusted != nil {
		s = s.over(*c.Untrusted)
	}
	return s
}

// over is s with what w sets.
func (s Settings) over(w Settings) Settings {
	if w.Namespace != "" {
		s.Namespace = w.Namespace
	}
	if w.ServiceAccount != "" {
		s.ServiceAccount = w.ServiceAccount
	}
	if w.Resources.Limits != nil || w.Resources.Requests != nil {
		s.Resources = w.Resources
	}
	if w.NodeSelector != nil {
		s.NodeSelector = w.NodeSelector
	}
	if w.Tolerations != nil {
		s.Tolerations = w.Tolerations
	}
	if w.Env != nil {
		s.Env = w.Env
	}
	if w.EnvFrom != nil {
		s.EnvFrom = w.EnvFrom
	}
	if w.Args != nil {
		s.Args = w.Args
	}
	if w.Timeout != nil {
		s.Timeout = w.Timeout
	}
	if w.TTL != nil {
		s.TTL = w.TTL
	}
	return s
}

// Check names every setting no Job could be made with.
func (c Config) Check() error {
	var errs []error
	if c.Image == "" {
		errs = append(errs, errors.New("kubernetesJobs.image: the image to run is not set"))
	}
	check := func(where string, s Settings) {
		if s.Namespace != "" {
			for _, m := range validation.IsDNS1123Label(s.Namespace) {
				errs = append(errs, fmt.Errorf("%s.namespace %q: %s", where, s.Namespace, m))
			}
		}
		if s.ServiceAccount != "" {
			for _, m := range validation.IsDNS1123Subdomain(s.ServiceAccount) {
				errs = append(errs, fmt.Errorf("%s.serviceAccount %q: %s", where, s.ServiceAccount, m))
			}
		}
		for _, d := range []struct {
			name string
			v    *metav1.Duration
		}{{"timeout", s.Timeout}, {"ttl", s.TTL}} {
			if d.v != nil && d.v.Duration < time.Second {
				errs = append(errs, fmt.Errorf("%s.%s: %s is shorter than a second", where, d.name, d.v.Duration))
			}
		}
	}
	check("kubernetesJobs", c.Settings)
	for ws, s := range c.Workspaces {
		check("kubernetesJobs.workspaces."+ws, s)
	}
	if c.Untrusted != nil {
		check("kubernetesJobs.untrusted", *c.Untrusted)
	}
	return errors.Join(errs...)
}

func (s Settings) namespace() string {
	if s.Namespace != "" {
		return s.Namespace
	}
	return "default"
}

func (s Settings) timeout() time.Duration {
	if s.Timeout != nil {
		return s.Timeout.Duration
	}
	return defaultTimeout
}

func (s Settings) ttl() time.Duration {
	if s.TTL != nil {
		return s.TTL.Duration
	}
	return defaultTTL
}
