package image

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// botDeployment is what deploy/kubernetes/bot.yaml's Deployment says of how
// the bot runs: its user, its command and its fixed variables.
type botDeployment struct {
	user, group int64
	command     []string
	env         []string
}

func readBotDeployment(t *testing.T) botDeployment {
	t.Helper()
	b, err := os.ReadFile("../deploy/kubernetes/bot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var d struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						SecurityContext struct {
							RunAsNonRoot *bool  `json:"runAsNonRoot"`
							RunAsUser    *int64 `json:"runAsUser"`
							RunAsGroup   *int64 `json:"runAsGroup"`
						} `json:"securityContext"`
						Containers []struct {
							Command []string `json:"command"`
							Env     []struct {
								Name  string  `json:"name"`
								Value *string `json:"value"`
							} `json:"env"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatalf("deploy/kubernetes/bot.yaml: %v", err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		pod := d.Spec.Template.Spec
		sc := pod.SecurityContext
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.RunAsGroup == nil {
			t.Fatalf("deploy/kubernetes/bot.yaml: the pod's securityContext must set runAsNonRoot, a runAsUser other than 0 and runAsGroup: the image runs as root, for GitHub's runner")
		}
		if len(pod.Containers) != 1 || len(pod.Containers[0].Command) == 0 {
			t.Fatalf("deploy/kubernetes/bot.yaml: want one container with a command")
		}
		out := botDeployment{user: *sc.RunAsUser, group: *sc.RunAsGroup, command: pod.Containers[0].Command}
		for _, e := range pod.Containers[0].Env {
			if e.Value != nil {
				out.env = append(out.env, e.Name+"="+*e.Value)
			}
		}
		return out
	}
	t.Fatalf("deploy/kubernetes/bot.yaml has no Deployment")
	return botDeployment{}
}

// TestBotRunsFromTheImage starts the bot from the action's image as
// deploy/kubernetes/bot.yaml runs it (its command instead of the
// entrypoint, its non-root user, its HOME), with a test App key and webhook
// secret, and asks /healthz.
func TestBotRunsFromTheImage(t *testing.T) {
	b := newBuildah(t)
	dep := readBotDeployment(t)
	gh := githubfake.New(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const appID = 4242
	gh.SetAppKey(appID, &key.PublicKey)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	addr := testenv.FreeAddr(t)

	ctr := b.container(t)
	args := []string{"run", "--isolation", "chroot", "--user", fmt.Sprintf("%d:%d", dep.user, dep.group)}
	for _, kv := range append(dep.env,
		"KUSIONPR_LISTEN="+addr, "KUSIONPR_WEBHOOK_SECRET=test-webhook-secret", fmt.Sprintf("KUSIONPR_APP_ID=%d", appID),
		"KUSIONPR_APP_PRIVATE_KEY="+string(keyPEM), "KUSIONPR_GITHUB_API_URL="+gh.URL,
		"KUSIONPR_BACKEND=file:///tmp/releases", "KUSIONPR_SHUTDOWN_DELAY=0s", "KUSIONPR_SHUTDOWN_TIMEOUT=5s") {
		args = append(args, "-e", kv)
	}
	args = append(append(args, ctr, "--"), dep.command...)
	cmd := b.command(context.Background(), args...)
	var logs testenv.LogBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// SIGTERM, as the kubelet stops it; the bot drains and exits.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("the bot did not stop within 20 s of SIGTERM\n%s", logs.String())
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
				t.Fatalf("/healthz: %s %q\n%s", resp.Status, body, logs.String())
			}
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the bot exited before answering /healthz (%v)\n%s", err, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz did not answer within 60 s: %v\n%s", err, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"msg":"listening"`) {
		t.Errorf("the bot's log lacks its listening line:\n%s", logs.String())
	}
}
