// Package storeserver is a server of the HTTP store protocol (see
// backend's httpObjects and docs/stores.md), keeping objects in memory: the
// test server the HTTP store's conformance runs against, and the shape of
// the service a team puts in front of its own storage.
package storeserver

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Server keeps objects by key. Its zero value serves an empty store
// without authorization.
type Server struct {
	// Authorization, if set, is the header value every request must carry.
	Authorization string

	mu      sync.Mutex
	objects map[string][]byte
	// Requests counts the requests served.
	Requests int
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Authorization != "" && r.Header.Get("Authorization") != s.Authorization {
		http.Error(w, "bad credentials", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests++
	if s.objects == nil {
		s.objects = map[string][]byte{}
	}
	key := strings.TrimPrefix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("list"):
		prefix := key
		names := []string{}
		for k := range s.objects {
			if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
				names = append(names, rest)
			}
		}
		slices.Sort(names)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string][]string{"names": names})
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		data, ok := s.objects[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		if r.Method == http.MethodGet {
			_, _ = w.Write(data)
		}
	case r.Method == http.MethodPut:
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, exists := s.objects[key]
		if r.Header.Get("If-None-Match") == "*" && exists {
			http.Error(w, "exists", http.StatusPreconditionFailed)
			return
		}
		s.objects[key] = data
		if exists {
			w.WriteHeader(http.StatusNoContent)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// Snapshot is every object held: key to content.
func (s *Server) Snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.objects))
	for k, v := range s.objects {
		out[k] = string(v)
	}
	return out
}

// Delete removes key, as a service losing an object would.
func (s *Server) Delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
}
