package githubfake

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// webhookEvent is one event of @octokit/webhooks-examples' index: GitHub's
// published payloads of that event, several per action.
type webhookEvent struct {
	Name     string           `json:"name"`
	Examples []map[string]any `json:"examples"`
}

// events is read once per test binary, like the REST description.
var events struct {
	once sync.Once
	list []webhookEvent
	err  error
}

func loadEvents(dir string) ([]webhookEvent, error) {
	events.once.Do(func() {
		path := filepath.Join(dir, "webhooks-examples", "api.github.com", "index.json")
		raw, err := os.ReadFile(path)
		if err != nil {
			events.err = fmt.Errorf("githubfake: read GitHub's webhook examples: %w", err)
			return
		}
		if err := json.Unmarshal(raw, &events.list); err != nil {
			events.err = fmt.Errorf("githubfake: parse %s: %w", path, err)
		}
	})
	return events.list, events.err
}

// Event returns a copy of GitHub's first published payload of event name
// with action ("" for events without one, like push), to change freely.
// Cases the examples lack (a merged pull request, a comment on a pull
// request) are made by changing those fields only.
func Event(t testing.TB, name, action string) map[string]any {
	t.Helper()
	list, whole := eventsFor(t)
	var actions []string
	for _, e := range list {
		if e.Name != name {
			continue
		}
		for _, ex := range e.Examples {
			a, _ := ex["action"].(string)
			if a == action {
				return deepCopy(ex).(map[string]any)
			}
			actions = append(actions, fmt.Sprintf("%q", a))
		}
	}
	if !whole {
		t.Fatalf("githubfake: without GitHub's webhook examples installed the fake keeps no %s event with action %q (only the actions %v): add it to offlineEvents (internal/githubfake/offline.go) and run `go test ./internal/githubfake -run TestOfflineCut -update` with the test environment", name, action, actions)
	}
	t.Fatalf("githubfake: GitHub publishes no %s event with action %q (its examples have the actions %v)", name, action, actions)
	return nil
}

// WriteEvent writes payload as JSON to a new file in dir and returns its
// path, for GITHUB_EVENT_PATH.
func WriteEvent(t testing.TB, dir string, payload map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "event-*.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
