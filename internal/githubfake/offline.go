package githubfake

import (
	"embed"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// Without GitHub's description (a plain `go test`, no test environment) the
// fake still serves: it routes requests and answers them as it does with
// the description, from a cut of it kept in offline/ (every operation's
// method and path, and the documented answers of the operations below),
// but it checks neither requests nor answers against GitHub's schemas,
// which only the whole description holds. Under make test
// (KUSIONPR_REQUIRE_TESTENV) the description must be installed, so the
// check is never skipped there; TestOfflineCut fails there too when the cut
// is not what the installed description gives.
//
//go:embed offline/description.json offline/events.json
var offlineFiles embed.FS

// offlineOperations are the operations, besides those the handlers answer,
// whose documented success answers the cut keeps: those whose example
// handlers overlay (template), and those answered with the example alone
// that the project or its tests call.
var offlineOperations = []string{
	"issues/list-labels-on-issue",
	"repos/get",
}

// offlineEvents are the webhook events (name and action) whose first
// published payload the cut keeps, for Event.
var offlineEvents = [][2]string{
	{"check_run", "completed"},
	{"check_run", "created"},
	{"check_run", "requested_action"},
	{"check_run", "rerequested"},
	{"installation", "created"},
	{"installation_repositories", "added"},
	{"issue_comment", "created"},
	{"issue_comment", "deleted"},
	{"issue_comment", "edited"},
	{"issues", "edited"},
	{"issues", "labeled"},
	{"issues", "opened"},
	{"merge_group", "checks_requested"},
	{"ping", ""},
	{"pull_request", "closed"},
	{"pull_request", "labeled"},
	{"pull_request", "opened"},
	{"pull_request", "reopened"},
	{"pull_request", "synchronize"},
	{"push", ""},
	{"star", "created"},
	{"workflow_dispatch", ""},
	{"workflow_run", "completed"},
	{"workflow_run", "requested"},
}

var offlineCut struct {
	once   sync.Once
	desc   *description
	events []webhookEvent
	err    error
}

func loadOffline() (*description, []webhookEvent, error) {
	offlineCut.once.Do(func() {
		raw, err := offlineFiles.ReadFile("offline/description.json")
		if err == nil {
			offlineCut.desc, err = parseDescription(raw, "offline/description.json")
		}
		if err == nil {
			raw, err = offlineFiles.ReadFile("offline/events.json")
		}
		if err == nil {
			err = json.Unmarshal(raw, &offlineCut.events)
		}
		if err != nil {
			offlineCut.err = fmt.Errorf("githubfake: the cut of GitHub's description it serves from without one: %w", err)
		}
	})
	return offlineCut.desc, offlineCut.events, offlineCut.err
}

// descriptionFor is the description a fake of test t serves from, and
// whether it is GitHub's whole one, which requests and answers are checked
// against. Under make test a missing description fails t.
func descriptionFor(t testing.TB) (d *description, checked bool) {
	t.Helper()
	if dir, why := testenv.LookupOctokitDir(); why == "" {
		d, err := loadDescription(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d, true
	} else if testenv.Required() {
		t.Fatal(why)
	} else {
		uncheckedNote(t, why)
	}
	d, _, err := loadOffline()
	if err != nil {
		t.Fatal(err)
	}
	return d, false
}

// eventsFor is GitHub's published webhook payloads (whole true), or the
// cut's when they are not installed (a plain go test).
func eventsFor(t testing.TB) (list []webhookEvent, whole bool) {
	t.Helper()
	if dir, why := testenv.LookupOctokitDir(); why == "" {
		list, err := loadEvents(dir)
		if err != nil {
			t.Fatal(err)
		}
		return list, true
	} else if testenv.Required() {
		t.Fatal(why)
	} else {
		uncheckedNote(t, why)
	}
	_, list, err := loadOffline()
	if err != nil {
		t.Fatal(err)
	}
	return list, false
}

// noted holds the tests told that the fake does not check: once each,
// however many fakes and events they make.
var noted sync.Map

func uncheckedNote(t testing.TB, why string) {
	t.Helper()
	if _, dup := noted.LoadOrStore(t, true); dup {
		return
	}
	t.Cleanup(func() { noted.Delete(t) })
	t.Logf("githubfake: requests and answers are not checked against GitHub's REST description, which is not installed (%s); make test checks them", why)
}

// offlineGap is the violation of an operation the cut keeps no answer for:
// the fake would otherwise answer it with an empty body GitHub never sends.
func offlineGap(op string) string {
	return fmt.Sprintf("githubfake: without GitHub's description the fake keeps the documented answer of %s nowhere: add it to offlineOperations (internal/githubfake/offline.go) and run `go test ./internal/githubfake -run TestOfflineCut -update` with the test environment", op)
}
