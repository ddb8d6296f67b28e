package module

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger gives go-plugin the hclog.Logger it requires, writing JSON
// lines that slogWriter turns into slog records. go-plugin logs the module's
// stderr through this logger too, so nothing the module prints reaches the
// terminal directly.
func newHCLogger(logger *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Output:     &slogWriter{logger: logger},
		Level:      hclog.Trace, // the slog handler decides what is kept
		JSONFormat: true,
	})
}

// slogWriter receives hclog's JSON lines.
type slogWriter struct {
	logger *slog.Logger
}

func (w *slogWriter) Write(p []byte) (int, error) {
	for line := range bytes.SplitSeq(bytes.TrimSpace(p), []byte("\n")) {
		if len(line) > 0 {
			w.record(line)
		}
	}
	return len(p), nil
}

func (w *slogWriter) record(line []byte) {
	var entry map[string]any
	if err := json.Unmarshal(line, &entry); err != nil {
		w.logger.Debug(string(line))
		return
	}
	msg, _ := entry["@message"].(string)
	level := levelOf(entry["@level"])
	keys := make([]string, 0, len(entry))
	for k := range entry {
		switch k {
		case "@message", "@level", "@timestamp":
			// slog stamps its own time; the others become the record.
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		// hclog's "@module" is the logger's name (the binary, for lines
		// the module wrote); "module" is already the binary's path.
		name := strings.TrimPrefix(k, "@")
		if name == "module" {
			name = "logger"
		}
		attrs = append(attrs, slog.Any(name, entry[k]))
	}
	w.logger.LogAttrs(context.Background(), level, msg, attrs...)
}

func levelOf(v any) slog.Level {
	s, _ := v.(string)
	switch s {
	case "trace":
		return slog.LevelDebug - 4
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}
