package kubernetes

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ready evaluates whether a live object is ready. reason says what is
// missing when it is not. failed is set when the object can no longer become
// ready (a failed Job, a Deployment past its progress deadline).
func ready(obj map[string]any) (ok bool, reason string, failed error) {
	if obj == nil {
		return false, "not found", nil
	}
	group, _, _ := strings.Cut(str(obj, "apiVersion"), "/")
	if !strings.Contains(str(obj, "apiVersion"), "/") {
		group = ""
	}
	if meta, _ := obj["metadata"].(map[string]any); meta != nil && meta["deletionTimestamp"] != nil {
		return false, "being deleted", nil
	}
	switch group + "/" + str(obj, "kind") {
	case "apps/Deployment":
		return deploymentReady(obj)
	case "apps/StatefulSet":
		return statefulSetReady(obj)
	case "apps/DaemonSet":
		return daemonSetReady(obj)
	case "batch/Job":
		return jobReady(obj)
	case "/Service":
		if str(obj, "spec", "type") != "LoadBalancer" {
			return true, "", nil
		}
		if ing, _ := get(obj, "status", "loadBalancer", "ingress").([]any); len(ing) > 0 {
			return true, "", nil
		}
		return false, "load balancer has no ingress yet", nil
	case "/PersistentVolumeClaim":
		if p := str(obj, "status", "phase"); p != "Bound" {
			return false, fmt.Sprintf("%s, not yet bound to a volume", orUnknown(p)), nil
		}
		return true, "", nil
	case "/Pod":
		return podReady(obj)
	case "apiextensions.k8s.io/CustomResourceDefinition":
		if s, _ := condition(obj, "Established"); s == "True" {
			return true, "", nil
		}
		if s, msg := condition(obj, "NamesAccepted"); s == "False" {
			return false, "names not accepted: " + msg, nil
		}
		return false, "not Established", nil
	}
	return conditionsReady(obj)
}

// conditionsReady judges any other kind by the conditions its controller
// reports, as kstatus does: a Ready condition, else an Available one, must
// be True once the controller has seen the latest spec. An object with
// neither (a ConfigMap, a custom resource no controller serves) is ready
// as soon as it exists.
func conditionsReady(obj map[string]any) (bool, string, error) {
	for _, t := range []string{"Ready", "Available"} {
		c := findCondition(obj, t)
		if c == nil {
			continue
		}
		if _, reports := num(obj, "status", "observedGeneration"); reports {
			if ok, why := observed(obj); !ok {
				return false, why, nil
			}
		}
		if str(c, "status") == "True" {
			return true, "", nil
		}
		return false, conditionText(c), nil
	}
	return true, "", nil
}

// conditionText reads a condition that is not True: "Ready is False:
// Reason: message".
func conditionText(c map[string]any) string {
	s := fmt.Sprintf("%s is %s", str(c, "type"), orUnknown(str(c, "status")))
	if r := str(c, "reason"); r != "" {
		s += ": " + r
	}
	if m := str(c, "message"); m != "" {
		s += ": " + m
	}
	return s
}

// podReady: a Pod is ready when its Ready condition is True, or it ran to
// completion; a failed one can no longer become ready. The reason names
// what holds it: scheduling, then the first container waiting.
func podReady(obj map[string]any) (bool, string, error) {
	phase := str(obj, "status", "phase")
	switch phase {
	case "Succeeded":
		return true, "", nil
	case "Failed":
		msg := str(obj, "status", "message")
		if msg == "" {
			msg = orUnknown(str(obj, "status", "reason"))
		}
		return false, "", fmt.Errorf("pod failed: %s", msg)
	}
	if s, _ := condition(obj, "Ready"); s == "True" {
		return true, "", nil
	}
	if c := findCondition(obj, "PodScheduled"); c != nil && str(c, "status") == "False" {
		return false, "not scheduled: " + orUnknown(str(c, "message")), nil
	}
	for _, key := range []string{"initContainerStatuses", "containerStatuses"} {
		cs, _ := get(obj, "status", key).([]any)
		for _, c := range cs {
			m, _ := c.(map[string]any)
			if w, _ := get(m, "state", "waiting").(map[string]any); w != nil && str(w, "reason") != "" {
				why := fmt.Sprintf("container %s waiting: %s", str(m, "name"), str(w, "reason"))
				if msg := str(w, "message"); msg != "" {
					why += ": " + msg
				}
				return false, why, nil
			}
		}
	}
	return false, fmt.Sprintf("%s, not Ready", orUnknown(phase)), nil
}

// observed reports whether the controller has seen the latest spec.
func observed(obj map[string]any) (bool, string) {
	gen, _ := num(obj, "metadata", "generation")
	og, _ := num(obj, "status", "observedGeneration")
	if og < gen {
		return false, fmt.Sprintf("generation %d not yet observed (observed %d)", gen, og)
	}
	return true, ""
}

func specReplicas(obj map[string]any) int64 {
	if n, ok := num(obj, "spec", "replicas"); ok {
		return n
	}
	return 1
}

func deploymentReady(obj map[string]any) (bool, string, error) {
	if s, msg := conditionReason(obj, "Progressing"); s == "ProgressDeadlineExceeded" {
		return false, "", fmt.Errorf("progress deadline exceeded: %s", msg)
	}
	if ok, why := observed(obj); !ok {
		return false, why, nil
	}
	want := specReplicas(obj)
	updated, _ := num(obj, "status", "updatedReplicas")
	available, _ := num(obj, "status", "availableReplicas")
	total, _ := num(obj, "status", "replicas")
	switch {
	case updated < want:
		return false, fmt.Sprintf("%d/%d replicas updated", updated, want), nil
	case total > updated:
		return false, fmt.Sprintf("%d old replicas pending termination", total-updated), nil
	case available < want || available != updated:
		return false, fmt.Sprintf("%d/%d replicas available", available, want), nil
	}
	return true, "", nil
}

func statefulSetReady(obj map[string]any) (bool, string, error) {
	if ok, why := observed(obj); !ok {
		return false, why, nil
	}
	want := specReplicas(obj)
	readyN, _ := num(obj, "status", "readyReplicas")
	if readyN < want {
		return false, fmt.Sprintf("%d/%d replicas ready", readyN, want), nil
	}
	if str(obj, "spec", "updateStrategy", "type") == "OnDelete" {
		return true, "", nil
	}
	if partition, ok := num(obj, "spec", "updateStrategy", "rollingUpdate", "partition"); ok && partition > 0 {
		updated, _ := num(obj, "status", "updatedReplicas")
		if updated < want-partition {
			return false, fmt.Sprintf("%d/%d replicas updated (partition %d)", updated, want-partition, partition), nil
		}
		return true, "", nil
	}
	cur, upd := str(obj, "status", "currentRevision"), str(obj, "status", "updateRevision")
	if cur != upd {
		return false, fmt.Sprintf("revision %s not yet rolled out (current %s)", orUnknown(upd), orUnknown(cur)), nil
	}
	return true, "", nil
}

func daemonSetReady(obj map[string]any) (bool, string, error) {
	if ok, why := observed(obj); !ok {
		return false, why, nil
	}
	desired, _ := num(obj, "status", "desiredNumberScheduled")
	updated, _ := num(obj, "status", "updatedNumberScheduled")
	available, _ := num(obj, "status", "numberAvailable")
	if updated < desired {
		return false, fmt.Sprintf("%d/%d pods updated", updated, desired), nil
	}
	if available != desired {
		return false, fmt.Sprintf("%d/%d pods available", available, desired), nil
	}
	return true, "", nil
}

func jobReady(obj map[string]any) (bool, string, error) {
	if s, msg := condition(obj, "Failed"); s == "True" {
		if msg == "" {
			msg = "job failed"
		}
		return false, "", fmt.Errorf("failed: %s", msg)
	}
	if s, _ := condition(obj, "Complete"); s == "True" {
		return true, "", nil
	}
	succeeded, _ := num(obj, "status", "succeeded")
	return false, fmt.Sprintf("not complete (%d succeeded)", succeeded), nil
}

// condition returns the status and message of status.conditions[type=t].
func condition(obj map[string]any, t string) (status, message string) {
	c := findCondition(obj, t)
	return str(c, "status"), str(c, "message")
}

// conditionReason returns the reason and message of status.conditions[type=t].
func conditionReason(obj map[string]any, t string) (reason, message string) {
	c := findCondition(obj, t)
	return str(c, "reason"), str(c, "message")
}

func findCondition(obj map[string]any, t string) map[string]any {
	cs, _ := get(obj, "status", "conditions").([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

func get(obj map[string]any, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func str(obj map[string]any, path ...string) string {
	s, _ := get(obj, path...).(string)
	return s
}

// num reads an integer whichever way the object was decoded.
func num(obj map[string]any, path ...string) (int64, bool) {
	switch n := get(obj, path...).(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) {
			return int64(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
	}
	return 0, false
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
