package builtin

import (
	"maps"
	"net"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// containerConfig is a container of a service or job workload, as the
// catalog's kam Container schema has it.
type containerConfig struct {
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
	// Env keeps the node: its order is the order of the container's env, and
	// later variables may refer to earlier ones with $(NAME).
	Env            *yaml.Node            `json:"env"`
	WorkingDir     string                `json:"workingDir"`
	Resources      map[string]string     `json:"resources"`
	Files          map[string]fileConfig `json:"files"`
	Dirs           map[string]string     `json:"dirs"`
	ReadinessProbe *probeConfig          `json:"readinessProbe"`
	LivenessProbe  *probeConfig          `json:"livenessProbe"`
	StartupProbe   *probeConfig          `json:"startupProbe"`
	Lifecycle      *lifecycleConfig      `json:"lifecycle"`
}

type fileConfig struct {
	// Content is a pointer so that an empty file is not a missing one.
	Content     *string `json:"content"`
	ContentFrom string  `json:"contentFrom"`
	Mode        string  `json:"mode"`
}

type probeConfig struct {
	ProbeHandler        *handlerConfig `json:"probeHandler"`
	InitialDelaySeconds int32          `json:"initialDelaySeconds"`
	TimeoutSeconds      int32          `json:"timeoutSeconds"`
	PeriodSeconds       int32          `json:"periodSeconds"`
	SuccessThreshold    int32          `json:"successThreshold"`
	FailureThreshold    int32          `json:"failureThreshold"`
}

// handlerConfig is one of the catalog's Http, Exec and Tcp schemas, told
// apart by _type (service.container.probe.Http and so on).
type handlerConfig struct {
	Type    string            `json:"_type"`
	URL     string            `json:"url"`
	Command []string          `json:"command"`
	Headers map[string]string `json:"headers"`
}

type lifecycleConfig struct {
	PreStop   *handlerConfig `json:"preStop"`
	PostStart *handlerConfig `json:"postStart"`
}

const secretScheme = "secret://"

// pod is what the containers of a workload turn into.
type pod struct {
	containers []any
	volumes    []any
	// configMaps hold the files given by content.
	configMaps []model.Resource
}

// podBuilder turns containers into a pod spec's parts, collecting problems.
type podBuilder struct {
	src   module.Source
	uname string
	ns    string
	p     *problems
	out   pod
	// volumeAt finds a volume by name: two files from one secret share it.
	volumeAt map[string]int
}

// buildPod turns the containers, sorted by name, into containers, volumes
// and ConfigMaps; problems are reported at containers.<name>... of src.
func buildPod(src module.Source, req module.Request, containers map[string]containerConfig) (pod, error) {
	var p problems
	b := &podBuilder{src: src, uname: uniqueName(req), ns: req.Project, p: &p, volumeAt: map[string]int{}}
	if len(containers) == 0 {
		p.add(src, "containers", "required: at least one container")
	}
	for _, name := range slices.Sorted(maps.Keys(containers)) {
		b.container(name, containers[name])
	}
	if err := p.err(); err != nil {
		return pod{}, err
	}
	return b.out, nil
}

func (b *podBuilder) container(name string, c containerConfig) {
	at := joinPath("containers", name)
	if len(validation.IsDNS1123Label(name)) != 0 {
		b.p.add(b.src, at, "not a valid container name: want at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit")
	}
	out := map[string]any{"name": name}
	if c.Image == "" {
		b.p.add(b.src, joinPath(at, "image"), "required")
	} else {
		out["image"] = c.Image
	}
	if len(c.Command) > 0 {
		out["command"] = anyList(c.Command)
	}
	if len(c.Args) > 0 {
		out["args"] = anyList(c.Args)
	}
	if c.WorkingDir != "" {
		out["workingDir"] = c.WorkingDir
	}
	if env := b.env(joinPath(at, "env"), c.Env); len(env) > 0 {
		out["env"] = env
	}
	if res := b.resources(joinPath(at, "resources"), c.Resources); res != nil {
		out["resources"] = res
	}
	probes := []struct {
		key string
		cfg *probeConfig
	}{
		{"readinessProbe", c.ReadinessProbe},
		{"livenessProbe", c.LivenessProbe},
		{"startupProbe", c.StartupProbe},
	}
	for _, pr := range probes {
		if pr.cfg == nil {
			continue
		}
		if v := b.probe(joinPath(at, pr.key), pr.cfg); v != nil {
			out[pr.key] = v
		}
	}
	if c.Lifecycle != nil {
		if v := b.lifecycle(joinPath(at, "lifecycle"), c.Lifecycle); v != nil {
			out["lifecycle"] = v
		}
	}
	if mounts := b.mounts(at, name, c); len(mounts) > 0 {
		out["volumeMounts"] = mounts
	}
	b.out.containers = append(b.out.containers, out)
}

// env walks the mapping in its order. A value secret://<name>/<key> reads
// the key of a Secret, as Kusion's "magic env" does.
func (b *podBuilder) env(at string, n *yaml.Node) []any {
	n = resolveAlias(n)
	if n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		b.p.add(b.src, at, "want a mapping of variable names to values")
		return nil
	}
	var out []any
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolveAlias(n.Content[i]), resolveAlias(n.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			b.p.add(b.src, at, "a variable name must be a string")
			continue
		}
		if kn.ShortTag() == "!!merge" {
			b.p.add(b.src, at, "merge keys (<<) are not supported here: they would lose the order of the variables")
			continue
		}
		name := kn.Value
		vat := joinPath(at, name)
		if seen[name] {
			b.p.add(b.src, vat, "given twice")
			continue
		}
		seen[name] = true
		if name == "" {
			b.p.add(b.src, vat, "a variable name must not be empty")
			continue
		}
		var value string
		switch {
		case vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!null":
		case vn.Kind == yaml.ScalarNode:
			value = vn.Value
		default:
			b.p.add(b.src, vat, "want a string")
			continue
		}
		if strings.HasPrefix(value, secretScheme) {
			secret, key, ok := secretKey(value)
			if !ok {
				b.p.add(b.src, vat, "want secret://<secret name>/<key>")
				continue
			}
			out = append(out, map[string]any{
				"name": name,
				"valueFrom": map[string]any{
					"secretKeyRef": map[string]any{"name": secret, "key": key},
				},
			})
			continue
		}
		v := map[string]any{"name": name}
		if value != "" {
			v["value"] = value
		}
		out = append(out, v)
	}
	return out
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// secretKey parses secret://<name>/<key>.
func secretKey(ref string) (name, key string, ok bool) {
	rest, found := strings.CutPrefix(ref, secretScheme)
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// resources reads "limit" or "request-limit" per resource name.
func (b *podBuilder) resources(at string, in map[string]string) map[string]any {
	requests, limits := map[string]any{}, map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		rat := joinPath(at, name)
		parts := strings.Split(in[name], "-")
		if len(parts) > 2 {
			b.p.add(b.src, rat, "want a limit (1Gi) or a request and a limit (500m-1)")
			continue
		}
		qs := make([]resource.Quantity, len(parts))
		ok := true
		for i, s := range parts {
			q, err := resource.ParseQuantity(strings.TrimSpace(s))
			if err != nil {
				b.p.add(b.src, rat, "%q is not a quantity such as 500m or 1Gi", strings.TrimSpace(s))
				ok = false
				continue
			}
			qs[i] = q
		}
		if !ok {
			continue
		}
		if len(qs) == 2 {
			// The API server refuses a request above its limit; say so here.
			if qs[0].Cmp(qs[1]) > 0 {
				b.p.add(b.src, rat, "the request %s is more than the limit %s", qs[0].String(), qs[1].String())
				continue
			}
			requests[name] = qs[0].String()
		}
		limits[name] = qs[len(qs)-1].String()
	}
	out := map[string]any{}
	if len(requests) > 0 {
		out["requests"] = requests
	}
	if len(limits) > 0 {
		out["limits"] = limits
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (b *podBuilder) probe(at string, c *probeConfig) map[string]any {
	if c.ProbeHandler == nil {
		b.p.add(b.src, joinPath(at, "probeHandler"), "required")
		return nil
	}
	out := b.handler(joinPath(at, "probeHandler"), c.ProbeHandler, true)
	fields := []struct {
		key string
		v   int32
	}{
		{"initialDelaySeconds", c.InitialDelaySeconds},
		{"timeoutSeconds", c.TimeoutSeconds},
		{"periodSeconds", c.PeriodSeconds},
		{"successThreshold", c.SuccessThreshold},
		{"failureThreshold", c.FailureThreshold},
	}
	for _, f := range fields {
		switch {
		case f.v < 0:
			b.p.add(b.src, joinPath(at, f.key), "must not be negative")
		case f.v > 0 && out != nil:
			out[f.key] = int(f.v)
		}
	}
	return out
}

func (b *podBuilder) lifecycle(at string, c *lifecycleConfig) map[string]any {
	out := map[string]any{}
	if c.PreStop != nil {
		if h := b.handler(joinPath(at, "preStop"), c.PreStop, false); h != nil {
			out["preStop"] = h
		}
	}
	if c.PostStart != nil {
		if h := b.handler(joinPath(at, "postStart"), c.PostStart, false); h != nil {
			out["postStart"] = h
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// handler turns a probe or lifecycle handler into its Kubernetes form; tcp
// says whether a Tcp handler is allowed (lifecycle hooks have none).
func (b *podBuilder) handler(at string, h *handlerConfig, tcp bool) map[string]any {
	want := "want service.container.probe.Http or service.container.probe.Exec"
	if tcp {
		want = "want service.container.probe.Http, service.container.probe.Exec or service.container.probe.Tcp"
	}
	// The prefix names the KCL package (service or job); the schema is what
	// tells the handlers apart.
	kind := h.Type
	if i := strings.LastIndex(kind, "."); i >= 0 {
		kind = kind[i+1:]
	}
	unused := func(field string, set bool) {
		if set {
			b.p.add(b.src, joinPath(at, field), "not used by %s handlers", kind)
		}
	}
	switch {
	case h.Type == "":
		b.p.add(b.src, joinPath(at, "_type"), "required: %s", want)
		return nil
	case kind == "Http":
		unused("command", len(h.Command) > 0)
		get := b.httpGet(joinPath(at, "url"), h.URL)
		if get == nil {
			return nil
		}
		if len(h.Headers) > 0 {
			headers := make([]any, 0, len(h.Headers))
			for _, name := range slices.Sorted(maps.Keys(h.Headers)) {
				headers = append(headers, map[string]any{"name": name, "value": h.Headers[name]})
			}
			get["httpHeaders"] = headers
		}
		return map[string]any{"httpGet": get}
	case kind == "Exec":
		unused("url", h.URL != "")
		unused("headers", len(h.Headers) > 0)
		if len(h.Command) == 0 {
			b.p.add(b.src, joinPath(at, "command"), "required")
			return nil
		}
		return map[string]any{"exec": map[string]any{"command": anyList(h.Command)}}
	case kind == "Tcp" && tcp:
		unused("command", len(h.Command) > 0)
		unused("headers", len(h.Headers) > 0)
		sock := b.tcpSocket(joinPath(at, "url"), h.URL)
		if sock == nil {
			return nil
		}
		return map[string]any{"tcpSocket": sock}
	default:
		b.p.add(b.src, joinPath(at, "_type"), "unsupported handler %s: %s", h.Type, want)
		return nil
	}
}

// httpGet splits a URL as the catalog does. A local host is left out: the
// kubelet sends probes to the pod's IP unless told otherwise, and
// "localhost" would be the node.
func (b *podBuilder) httpGet(at, raw string) map[string]any {
	if raw == "" {
		b.p.add(b.src, at, "required")
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		b.p.add(b.src, at, "want an http:// or https:// URL such as http://localhost:8080/healthz")
		return nil
	}
	out := map[string]any{"scheme": strings.ToUpper(u.Scheme)}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if p != "" {
		out["path"] = p
	}
	if host := u.Hostname(); !isLocalHost(host) {
		out["host"] = host
	}
	// The catalog leaves the port empty when the URL has none, which the
	// API server refuses; the scheme's port is what the URL means.
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if s := u.Port(); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			b.p.add(b.src, at, "the port must be between 1 and 65535")
			return nil
		}
		port = n
	}
	out["port"] = port
	return out
}

// tcpSocket reads host:port (or tcp://host:port, or a bare port); a port
// that is not a number is a named container port.
func (b *podBuilder) tcpSocket(at, raw string) map[string]any {
	if raw == "" {
		b.p.add(b.src, at, "required")
		return nil
	}
	s := strings.TrimPrefix(raw, "tcp://")
	host, port := "", s
	if strings.Contains(s, ":") {
		var err error
		host, port, err = net.SplitHostPort(s)
		if err != nil {
			b.p.add(b.src, at, "want host:port, such as localhost:8080")
			return nil
		}
	}
	out := map[string]any{}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			b.p.add(b.src, at, "the port must be between 1 and 65535")
			return nil
		}
		out["port"] = n
	} else if len(validation.IsValidPortName(port)) == 0 {
		out["port"] = port
	} else {
		b.p.add(b.src, at, "want host:port, such as localhost:8080")
		return nil
	}
	if !isLocalHost(host) {
		out["host"] = host
	}
	return out
}

func isLocalHost(host string) bool {
	switch host {
	case "", "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// mount is one volume mount and the field that asked for it.
type mount struct {
	at    string
	value map[string]any
}

// mounts builds the container's files and dirs into volumes (added to the
// pod) and mounts (returned), files first, each sorted by path.
func (b *podBuilder) mounts(at, container string, c containerConfig) []any {
	// A content file is mounted as its folder, as the catalog does, unless
	// something else lives in that folder: a folder mount would hide it.
	folderUse := map[string]int{}
	for _, p := range slices.Sorted(maps.Keys(c.Files)) {
		folderUse[path.Dir(cleanPath(p))]++
	}
	for _, p := range slices.Sorted(maps.Keys(c.Dirs)) {
		folderUse[cleanPath(p)]++
	}

	var list []mount
	for idx, p := range slices.Sorted(maps.Keys(c.Files)) {
		fat := joinPath(joinPath(at, "files"), p)
		if m, ok := b.file(fat, container, idx, p, c.Files[p], folderUse); ok {
			list = append(list, mount{at: fat, value: m})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(c.Dirs)) {
		dat := joinPath(joinPath(at, "dirs"), p)
		name, ok := secretName(c.Dirs[p])
		if !ok {
			b.p.add(b.src, dat, "want secret://<secret name>")
			continue
		}
		vol := dnsLabel(name)
		b.addVolume(dat, vol, map[string]any{"name": vol, "secret": map[string]any{"secretName": name}})
		list = append(list, mount{at: dat, value: map[string]any{"name": vol, "mountPath": cleanPath(p)}})
	}

	// Kubernetes refuses two mounts at one path.
	usedBy := map[string]string{}
	out := make([]any, 0, len(list))
	for _, m := range list {
		mp := m.value["mountPath"].(string)
		if prev, dup := usedBy[mp]; dup {
			b.p.add(b.src, m.at, "mounts at %s, as %s does", mp, prev)
			continue
		}
		usedBy[mp] = m.at
		out = append(out, m.value)
	}
	return out
}

// file adds the volume of one entry of files and returns its mount.
func (b *podBuilder) file(at, container string, idx int, p string, f fileConfig, folderUse map[string]int) (map[string]any, bool) {
	full := cleanPath(p)
	base := path.Base(full)
	if strings.HasSuffix(p, "/") || base == "/" || base == "." || base == ".." {
		b.p.add(b.src, at, "the path must end with a file name")
		return nil, false
	}
	var mode any
	if f.Mode != "" {
		m, err := strconv.ParseInt(f.Mode, 0, 32)
		if err != nil {
			b.p.add(b.src, joinPath(at, "mode"), "want a file mode such as 0644")
			return nil, false
		}
		if m < 0 || m > 0o777 {
			b.p.add(b.src, joinPath(at, "mode"), "must be between 0 and 0777")
			return nil, false
		}
		mode = int(m)
	}
	switch {
	case f.ContentFrom != "" && f.Content != nil:
		b.p.add(b.src, at, "give content or contentFrom, not both")
		return nil, false
	case f.ContentFrom != "":
		ref := f.ContentFrom
		if strings.HasPrefix(ref, "${") && strings.HasSuffix(ref, "}") {
			ref = ref[2 : len(ref)-1]
		}
		name, key, ok := secretKey(ref)
		if !ok {
			b.p.add(b.src, joinPath(at, "contentFrom"), "want secret://<secret name>/<key>")
			return nil, false
		}
		vol := dnsLabel(name)
		source := map[string]any{"secretName": name}
		if mode != nil {
			source["defaultMode"] = mode
		}
		b.addVolume(at, vol, map[string]any{"name": vol, "secret": source})
		return map[string]any{"name": vol, "mountPath": full, "subPath": key}, true
	case f.Content != nil:
		cm := b.uname + "-" + container + "-" + strconv.Itoa(idx)
		b.out.configMaps = append(b.out.configMaps, kubeResource("v1", "ConfigMap",
			objectMeta{name: cm, namespace: b.ns},
			map[string]any{"data": map[string]any{base: *f.Content}}))
		vol := dnsLabel(cm)
		source := map[string]any{"name": cm}
		if mode != nil {
			source["defaultMode"] = mode
		}
		b.addVolume(at, vol, map[string]any{"name": vol, "configMap": source})
		dir := path.Dir(full)
		if folderUse[dir] == 1 {
			return map[string]any{"name": vol, "mountPath": dir}, true
		}
		return map[string]any{"name": vol, "mountPath": full, "subPath": base}, true
	default:
		b.p.add(b.src, at, "give content or contentFrom")
		return nil, false
	}
}

// addVolume adds a volume once: files and dirs from one secret share it, as
// long as they agree on its mode.
func (b *podBuilder) addVolume(at, name string, vol map[string]any) {
	if i, ok := b.volumeAt[name]; ok {
		if !reflect.DeepEqual(b.out.volumes[i], vol) {
			b.p.add(b.src, at, "volume %s is already mounted with another mode; give the files of one secret the same mode", name)
		}
		return
	}
	b.volumeAt[name] = len(b.out.volumes)
	b.out.volumes = append(b.out.volumes, vol)
}

// secretName parses secret://<name>.
func secretName(ref string) (string, bool) {
	rest, found := strings.CutPrefix(ref, secretScheme)
	rest = strings.TrimSuffix(rest, "/")
	if !found || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

// cleanPath makes a path absolute: the catalog mounts files and dirs at
// "/" + path, so a relative path means one below the root.
func cleanPath(p string) string {
	return path.Clean("/" + p)
}
