package kubejob

import (
	"encoding/json"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kusionpr/kusionpr/workflow"
)

const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "kusionpr"
	labelRequest   = "kusionpr.io/request"
	labelCommand   = "kusionpr.io/command"
	// container is the name of the Job's one container.
	container = "execute"
	// nonRoot is the user the worker runs as: the image has no USER, as
	// GitHub's Docker actions must run as root; a Job need not.
	nonRoot = 65532
)

// jobName is the Job's name for the request id: a valid name, the same in
// every bot, so that the API server's AlreadyExists is the lock.
func jobName(id string) string { return "kusionpr-" + id }

// newJob is the Job running req with s. store is the release store the
// worker reads the checkout from and leaves the result in, with the lease
// its releases hold the stack by (the bot's: a worker beats, and looks for
// a cancel, as often as the bot expects).
func newJob(image string, s Settings, req workflow.Request, store workflow.StoreConfig) (*batchv1.Job, error) {
	wire, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	id := req.ID()
	labels := map[string]string{labelManagedBy: managedBy, labelRequest: id, labelCommand: string(req.Command)}
	annotations := map[string]string{
		"kusionpr.io/stack":  req.Stack,
		"kusionpr.io/commit": req.Commit,
		"kusionpr.io/actor":  req.Origin.Actor,
	}
	if r := req.Origin.Repository; r != nil {
		annotations["kusionpr.io/repository"] = r.FullName
	}
	if req.Origin.PullRequest > 0 {
		annotations["kusionpr.io/pull-request"] = strconv.Itoa(req.Origin.PullRequest)
	}
	args := []string{"execute", "--request", string(wire), "--backend", store.Backend}
	if store.Lease > 0 {
		args = append(args, "--lease", store.Lease.String())
	}
	args = append(args, s.Args...)
	no, yes := false, true
	user := int64(nonRoot)
	deadline, ttl := int64(s.timeout().Seconds()), int32(s.ttl().Seconds())
	// One try: a failed apply is reported, not run again unseen.
	var backoff int32
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: jobName(id), Namespace: s.namespace(), Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: s.ServiceAccount,
					NodeSelector:       s.NodeSelector,
					Tolerations:        s.Tolerations,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: &yes, RunAsUser: &user, RunAsGroup: &user, FSGroup: &user,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name: container, Image: image, Args: args,
						Env:     append([]corev1.EnvVar{{Name: "HOME", Value: "/tmp"}}, s.Env...),
						EnvFrom: s.EnvFrom, Resources: s.Resources,
						// The log's tail is in the pod's status when the
						// worker fails: the bot reads it without the logs API.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}, nil
}

// state is where a Job is: running, or done one way or the other.
type state struct {
	done, failed bool
	// why is the Job's own word on a failure (DeadlineExceeded: its
	// timeout passed).
	reason, message string
}

func jobState(j *batchv1.Job) state {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return state{done: true}
		case batchv1.JobFailed:
			return state{done: true, failed: true, reason: c.Reason, message: c.Message}
		}
	}
	return state{}
}

func (s state) String() string {
	switch {
	case !s.done:
		return "running"
	case !s.failed:
		return "complete"
	}
	return fmt.Sprintf("failed (%s: %s)", s.reason, s.message)
}
