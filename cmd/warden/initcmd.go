package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// hookTimeout is the seconds Claude Code gives each of Warden's hooks (its "timeout"): enough
// for a card to be answered, and the hook fails closed past it.
const hookTimeout = 60

// hookEvents are the Claude Code hook events Warden's hook answers.
var hookEvents = []string{"PreToolUse", "PostToolUse"}

type initOptions struct {
	dir    string
	server string
}

func newInitCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "init", Short: "Set a project up to run its agent under Warden"}
	o := &initOptions{}
	cc := &cobra.Command{
		Use:   "claude-code [--server URL] [--dir DIR]",
		Short: "Write Warden's hooks into .claude/settings.json (and, with --server, its gateway into .mcp.json)",
		Long: `Set a project up so that Claude Code asks Warden before every tool call. In the project
(the current directory, or --dir), .claude/settings.json gets a PreToolUse and a PostToolUse
hook, matcher "*", running "warden hook claude-code" (with --server URL when given) with a
timeout of 60 s. With --server, .mcp.json also gets an http MCP server "warden" at URL/mcp,
authorised by the agent token in the environment variable WARDEN_TOKEN.

Files are merged, never overwritten: every existing key, hook and server stays; a hook of
Warden's already there is not added again, and a "warden" server already there is left as
it is. A file that is not valid JSON is refused, untouched. It prints what it did to each
file: created, updated or unchanged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.claudeCode(cmd.OutOrStdout()) },
	}
	cc.Flags().StringVar(&o.dir, "dir", "", "the project directory (default: the current directory)")
	cc.Flags().StringVar(&o.server, "server", "", "the URL of a running warden serve, such as http://127.0.0.1:8640: the hook asks it, and .mcp.json points at its gateway")
	cmd.AddCommand(cc)
	return cmd
}

func (o *initOptions) claudeCode(out io.Writer) error {
	dir := o.dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--dir %s: not a directory", dir)
	}
	command := "warden hook claude-code"
	var server string
	if o.server != "" {
		u, err := url.Parse(o.server)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("--server %q: want the http(s) URL of warden serve, such as http://127.0.0.1:8640", o.server)
		}
		server = strings.TrimRight(u.String(), "/")
		command += " --server " + server
	}

	// Check both files before writing either, so that a bad one leaves the project as it was.
	settings := filepath.Join(dir, ".claude", "settings.json")
	sw, err := mergeSettings(settings, command)
	if err != nil {
		return err
	}
	var mw *jsonWrite
	if server != "" {
		if mw, err = mergeMCP(filepath.Join(dir, ".mcp.json"), server+"/mcp"); err != nil {
			return err
		}
	}
	for _, w := range []*jsonWrite{sw, mw} {
		if w == nil {
			continue
		}
		if err := w.apply(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, w.path)
		fmt.Fprintf(out, "%s %s", w.what(), rel)
		if len(w.notes) > 0 {
			fmt.Fprintf(out, ": %s", strings.Join(w.notes, "; "))
		}
		fmt.Fprintln(out)
	}
	if server != "" {
		fmt.Fprintln(out, "The warden server of .mcp.json sends the agent token in WARDEN_TOKEN: make one with warden token create --tenant T --role R, and export it where Claude Code runs.")
	}
	return nil
}

// A jsonWrite is a JSON file's new content, not yet written.
type jsonWrite struct {
	path    string
	created bool
	old     []byte
	data    []byte // nil: unchanged
	notes   []string
}

func (w *jsonWrite) what() string {
	switch {
	case w.data == nil:
		return "unchanged"
	case w.created:
		return "created"
	}
	return "updated"
}

// apply writes the new content through a temporary file and a rename, so that the file is
// the old or the new, never half of either.
func (w *jsonWrite) apply() error {
	if w.data == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(w.path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.path), "."+filepath.Base(w.path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(w.data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), w.path)
}

// readObject reads a JSON file that must hold one object; a missing file is an empty one.
func readObject(path string) (*jsonObject, *jsonWrite, error) {
	w := &jsonWrite{path: path}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.created = true
		return &jsonObject{}, w, nil
	case err != nil:
		return nil, nil, err
	}
	w.old = b
	obj, err := parseObject(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not valid JSON (%v): fix it or move it away; warden init does not overwrite it", path, err)
	}
	return obj, w, nil
}

// finish sets w's new content to obj's, unless nothing changed.
func (w *jsonWrite) finish(obj *jsonObject, changed bool) (*jsonWrite, error) {
	if !changed {
		return w, nil
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	w.data = buf.Bytes()
	return w, nil
}

// mergeSettings adds Warden's hook to .claude/settings.json for each of hookEvents, unless a
// hook running warden hook claude-code is there already.
func mergeSettings(path, command string) (*jsonWrite, error) {
	obj, w, err := readObject(path)
	if err != nil {
		return nil, err
	}
	hooks := &jsonObject{}
	if raw, ok := obj.get("hooks"); ok {
		if hooks, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("%s: hooks must be an object of hook events (%v); warden init does not overwrite it", path, err)
		}
	}
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	entry, err := json.Marshal(struct {
		Matcher string `json:"matcher"`
		Hooks   []hook `json:"hooks"`
	}{"*", []hook{{"command", command, hookTimeout}}})
	if err != nil {
		return nil, err
	}
	changed := false
	for _, event := range hookEvents {
		var list []json.RawMessage
		if raw, ok := hooks.get(event); ok {
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, fmt.Errorf("%s: hooks.%s must be a list of matchers (%v); warden init does not overwrite it", path, event, err)
			}
		}
		if have, same := wardenHook(list, command); have != "" {
			if !same {
				w.notes = append(w.notes, fmt.Sprintf("hooks.%s already runs %q, left as is (wanted %q)", event, have, command))
			}
			continue
		}
		list = append(list, entry)
		b, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		hooks.set(event, b)
		changed = true
		w.notes = append(w.notes, "hooks."+event+" runs "+command)
	}
	if changed {
		b, err := hooks.MarshalJSON()
		if err != nil {
			return nil, err
		}
		obj.set("hooks", b)
	}
	return w.finish(obj, changed)
}

// wardenHook finds a command hook of Warden's among an event's matchers: the command it
// runs, and whether it is exactly command.
func wardenHook(list []json.RawMessage, command string) (have string, same bool) {
	for _, raw := range list {
		var m struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		for _, h := range m.Hooks {
			f := strings.Fields(h.Command)
			if len(f) >= 3 && filepath.Base(f[0]) == "warden" && f[1] == "hook" && f[2] == "claude-code" {
				if strings.Join(f, " ") == command {
					return h.Command, true
				}
				have = h.Command
			}
		}
	}
	return have, false
}

// mergeMCP adds Warden's gateway to .mcp.json as the server "warden", unless one of that name
// is there already.
func mergeMCP(path, endpoint string) (*jsonWrite, error) {
	obj, w, err := readObject(path)
	if err != nil {
		return nil, err
	}
	servers := &jsonObject{}
	if raw, ok := obj.get("mcpServers"); ok {
		if servers, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("%s: mcpServers must be an object of servers (%v); warden init does not overwrite it", path, err)
		}
	}
	want := struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}{"http", endpoint, map[string]string{"Authorization": "Bearer ${WARDEN_TOKEN}"}}
	if raw, ok := servers.get("warden"); ok {
		// Compared as plain values, whatever the order of their keys.
		var have, wanted any
		_ = json.Unmarshal(raw, &have)
		b, _ := json.Marshal(want)
		_ = json.Unmarshal(b, &wanted)
		wb, _ := json.Marshal(wanted)
		hb, _ := json.Marshal(have)
		if !bytes.Equal(wb, hb) {
			w.notes = append(w.notes, fmt.Sprintf("mcpServers.warden is already there and differs, left as is (wanted url %s)", endpoint))
		}
		return w, nil
	}
	b, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	servers.set("warden", b)
	sb, err := servers.MarshalJSON()
	if err != nil {
		return nil, err
	}
	obj.set("mcpServers", sb)
	w.notes = append(w.notes, "mcpServers.warden is "+endpoint)
	return w.finish(obj, true)
}

// jsonObject is a JSON object that keeps its keys in their order and its values as written,
// so that a file merged into reads as it did, plus what was added.
type jsonObject struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseObject reads one JSON object, and nothing after it.
func parseObject(b []byte) (*jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want an object, not %v", tok)
	}
	o := &jsonObject{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // inside an object the decoder gives keys as strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more after the object")
	}
	return o, nil
}

func (o *jsonObject) get(key string) (json.RawMessage, bool) {
	v, ok := o.vals[key]
	return v, ok
}

func (o *jsonObject) set(key string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// MarshalJSON writes the object with its keys in order.
func (o *jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
