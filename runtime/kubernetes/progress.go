package kubernetes

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Waiting is an object a wait is not done with, and why.
type Waiting struct {
	// ID is the resource's id, as in apps/v1:Deployment:ns:web.
	ID string
	// Gone is set when the wait is for a deleted object to disappear,
	// unset when it is for the object to be ready.
	Gone bool
	// Reason is what is missing, from the object's status: "1/2 replicas
	// available", "Pending, not yet bound to a volume". One line.
	Reason string
	// Warning is the latest warning about the object (or the Pods and
	// ReplicaSets its controller made for it) as "Reason: message", empty
	// if there is none: a Warning event, or a Normal one whose reason
	// starts with Failed. One line.
	Warning string
	// Waited is how long the wait has lasted; it gives up at Timeout.
	Waited, Timeout time.Duration
}

// String is the line a person reads in a terminal:
//
//	Waiting for v1:PersistentVolumeClaim:ns:data (12s of 5m): Pending, not yet bound to a volume; last warning: ProvisioningFailed: ...
func (w Waiting) String() string {
	verb := "Waiting for"
	if w.Gone {
		verb = "Waiting for deleted"
	}
	s := fmt.Sprintf("%s %s (%s of %s): %s", verb, w.ID, shortDuration(w.Waited.Truncate(time.Second)), shortDuration(w.Timeout), w.Reason)
	if w.Warning != "" {
		s += "; last warning: " + w.Warning
	}
	return s
}

// Progress hears about the objects waits are not done with. It is called
// from every wait at once, so it must be safe for concurrent use, and
// should return quickly: the wait it is called from pauses meanwhile.
type Progress interface {
	Waiting(ctx context.Context, w Waiting)
}

// maxLine bounds a reason or a warning in a progress line or an error: a
// condition's or event's message is the cluster's text, of any length.
const maxLine = 300

// oneLine makes text from the cluster fit one line of a log: control
// characters (a newline could start a line a CI runner reads as a
// command) become spaces, runs of spaces one, and it is cut at maxLine.
func oneLine(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > maxLine {
		s = string(r[:maxLine-1]) + "…"
	}
	return s
}

// warningsWindow: an event last seen this long before a wait began still
// counts as news about it. Controllers repeat a warning while its cause
// lasts (the volume controller every 15s), so one older than this is
// about something past.
const warningsWindow = 5 * time.Minute

// eventsGVR is core/v1 events, read through the dynamic client.
var eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// warnings lists the Warning events of a namespace at most once per
// refresh, whichever waits ask: one list answers every workload waited for
// in that namespace, for the warnings of the Pods and ReplicaSets its
// controller made.
type warnings struct {
	mu   sync.Mutex
	byNS map[string]*nsWarnings
}

type nsWarnings struct {
	mu     sync.Mutex // one list in flight per namespace
	at     time.Time
	events []map[string]any
}

// maxEvents bounds one list: a namespace's events are kept an hour.
const maxEvents = 500

// warning is the latest warning about obj since its wait began (see
// latestWarning): from its own events, one list selected by its uid, and
// for a workload the namespace's Warning events, listed again if older
// than maxAge. It reads only when a progress line or a timeout error is
// written, never on every poll; a role that may not list events gets
// progress without them.
func (r *Runtime) warning(ctx context.Context, obj map[string]any, since time.Time, maxAge time.Duration) string {
	ns, uid := str(obj, "metadata", "namespace"), str(obj, "metadata", "uid")
	if ns == "" || uid == "" {
		return "" // cluster-scoped: its events land in any namespace
	}
	list, err := r.dynamic.Resource(eventsGVR).Namespace(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", uid).String(), Limit: maxEvents})
	var events []map[string]any
	if err != nil {
		r.log.Debug("list events", "namespace", ns, "error", scrubError(err, nil))
	} else {
		for _, e := range list.Items {
			events = append(events, e.Object)
		}
	}
	if _, workload := madeBy[groupKind(obj)]; workload {
		events = append(events, r.namespaceWarnings(ctx, ns, maxAge)...)
	}
	return latestWarning(events, obj, since.Add(-warningsWindow))
}

func (r *Runtime) namespaceWarnings(ctx context.Context, ns string, maxAge time.Duration) []map[string]any {
	r.warns.mu.Lock()
	if r.warns.byNS == nil {
		r.warns.byNS = map[string]*nsWarnings{}
	}
	n := r.warns.byNS[ns]
	if n == nil {
		n = &nsWarnings{}
		r.warns.byNS[ns] = n
	}
	r.warns.mu.Unlock()

	n.mu.Lock()
	defer n.mu.Unlock()
	if time.Since(n.at) >= maxAge {
		n.at, n.events = time.Now(), nil
		list, err := r.dynamic.Resource(eventsGVR).Namespace(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning", Limit: maxEvents})
		if err != nil {
			r.log.Debug("list warning events", "namespace", ns, "error", scrubError(err, nil))
		} else {
			for _, e := range list.Items {
				n.events = append(n.events, e.Object)
			}
		}
	}
	return n.events
}

// groupKind is "apps/Deployment", "/PersistentVolumeClaim".
func groupKind(obj map[string]any) string {
	group, _, _ := strings.Cut(str(obj, "apiVersion"), "/")
	if !strings.Contains(str(obj, "apiVersion"), "/") {
		group = ""
	}
	return group + "/" + str(obj, "kind")
}

// latestWarning is "Reason: message" of the newest warning about obj last
// seen after notBefore: a Warning event, or a Normal one whose reason says
// something failed (the volume controller's FailedBinding, "no persistent
// volumes available for this claim and no storage class is set", is Normal).
func latestWarning(events []map[string]any, obj map[string]any, notBefore time.Time) string {
	about := relatedTo(obj)
	var best map[string]any
	var bestAt time.Time
	for _, e := range events {
		if (str(e, "type") != "Warning" && !strings.HasPrefix(str(e, "reason"), "Failed")) || !about(e) {
			continue
		}
		if at := lastSeen(e); !at.Before(notBefore) && (best == nil || at.After(bestAt)) {
			best, bestAt = e, at
		}
	}
	if best == nil {
		return ""
	}
	return oneLine(orUnknown(str(best, "reason")) + ": " + str(best, "message"))
}

// madeBy matches the names of the Pods (and ReplicaSets) a workload's
// controller names after it: a Deployment's web-<hash> and
// web-<hash>-<suffix>, a StatefulSet's web-0, a DaemonSet's or Job's
// web-<suffix>.
var madeBy = map[string]string{
	"apps/Deployment":  `-[a-z0-9]{6,10}(-[a-z0-9]{5})?`,
	"apps/StatefulSet": `-[0-9]+`,
	"apps/DaemonSet":   `-[a-z0-9]{5}`,
	"batch/Job":        `-[a-z0-9]{5}`,
}

// relatedTo tells the events about obj: its own (by uid), and those of
// the Pods and ReplicaSets its controller made, whose warnings
// (FailedScheduling, FailedCreate) say why a workload is not ready.
func relatedTo(obj map[string]any) func(e map[string]any) bool {
	uid := str(obj, "metadata", "uid")
	var children *regexp.Regexp
	if pattern, ok := madeBy[groupKind(obj)]; ok {
		children = regexp.MustCompile("^" + regexp.QuoteMeta(str(obj, "metadata", "name")) + pattern + "$")
	}
	return func(e map[string]any) bool {
		if uid != "" && str(e, "involvedObject", "uid") == uid {
			return true
		}
		if children == nil {
			return false
		}
		switch str(e, "involvedObject", "kind") {
		case "Pod", "ReplicaSet":
			return children.MatchString(str(e, "involvedObject", "name"))
		}
		return false
	}
}

// lastSeen is when an event last happened, whichever of its times the
// component that wrote it filled.
func lastSeen(e map[string]any) time.Time {
	var at time.Time
	for _, path := range [][]string{{"lastTimestamp"}, {"eventTime"}, {"series", "lastObservedTime"}, {"metadata", "creationTimestamp"}} {
		if t, err := time.Parse(time.RFC3339, str(e, path...)); err == nil && t.After(at) {
			at = t
		}
	}
	return at
}
