package ghactions

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestConfigFromFile: the executor's settings as an operator writes them
// in the bot's configuration file: durations as text, written back the
// same; a setting no run could be dispatched with is named, every one of
// them at once.
func TestConfigFromFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		wantErr []string // substrings of the error, of reading or of Check; none: valid
		want    Config
	}{
		{name: "defaults", file: `{}`},
		{name: "every setting", file: `{"workflow": "deploy.yaml", "pollInterval": "1m", "timeout": "2h"}`,
			want: Config{Workflow: "deploy.yaml", PollInterval: Duration{time.Minute}, Timeout: Duration{2 * time.Hour}}},
		{name: "a duration as a number", file: `{"pollInterval": 30}`, wantErr: []string{`a duration such as "30s"`}},
		{name: "a duration that is no duration", file: `{"timeout": "forever"}`, wantErr: []string{"forever"}},
		{name: "a path, not a workflow file", file: `{"workflow": ".github/workflows/run.yml"}`, wantErr: []string{"want a workflow file's name"}},
		{name: "not YAML", file: `{"workflow": "run.sh"}`, wantErr: []string{`"run.sh"`}},
		{name: "only an extension", file: `{"workflow": ".yml"}`, wantErr: []string{`".yml"`}},
		{name: "too short, both", file: `{"pollInterval": "100ms", "timeout": "30s"}`,
			wantErr: []string{"pollInterval: 100ms is shorter than a second", "timeout: 30s is shorter than a minute"}},
		{name: "negative", file: `{"pollInterval": "-1s"}`, wantErr: []string{"shorter than a second"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(tc.file), &c)
			if err == nil {
				err = c.Check()
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if c != tc.want {
					t.Errorf("read %+v, want %+v", c, tc.want)
				}
				// What the bot writes back (its effective configuration)
				// reads the same.
				out, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				var again Config
				if err := json.Unmarshal(out, &again); err != nil || again != c {
					t.Errorf("written as %s, read back as %+v, %v", out, again, err)
				}
				return
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestConfigDefaults: what an operator who sets nothing gets.
func TestConfigDefaults(t *testing.T) {
	var c Config
	if c.workflow() != "kusion-run.yml" || c.poll() != 30*time.Second || c.timeout() != 6*time.Hour {
		t.Errorf("defaults: workflow %s, poll %s, timeout %s", c.workflow(), c.poll(), c.timeout())
	}
	c = Config{Workflow: "x.yml", PollInterval: Duration{time.Minute}, Timeout: Duration{time.Hour}}
	if c.workflow() != "x.yml" || c.poll() != time.Minute || c.timeout() != time.Hour {
		t.Errorf("set: workflow %s, poll %s, timeout %s", c.workflow(), c.poll(), c.timeout())
	}
}
