package surface_test

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// The golden cases under testdata/scout were written by hand from the seed document (Scout's
// tool permissions page), not from this code's output: each states what a session of the Scout
// deployment must hold, and the test checks examples/scout/warden.yaml against them.
//
// Every session in the seed's tables runs a certified model, so a case runs one
// (google/gemini-3.8-flash, which the seed names) unless it says model: ID, or model: none for
// a session that states none.

// certifiedScoutModel is the model a golden case runs on unless it names one.
const certifiedScoutModel = "google/gemini-3.8-flash"

type goldenCase struct {
	spec     surface.Spec
	env      map[string]string
	refused  string
	readOnly string // a word of why the session runs the read-only route; "" when it does not
	explains map[string]surface.Filter
	gates    map[string]string
	tools    []string
}

func parseGolden(t *testing.T, path string) goldenCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gc := goldenCase{env: map[string]string{}, explains: map[string]surface.Filter{}, gates: map[string]string{}}
	gc.spec.Model = certifiedScoutModel
	inTools := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if inTools {
			gc.tools = append(gc.tools, line)
			continue
		}
		if line == "tools:" {
			inTools = true
			gc.tools = []string{}
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("%s:%d: want key: value, got %q", path, n, line)
		}
		val = strings.TrimSpace(val)
		switch key {
		case "role":
			gc.spec.Role = val
		case "tenant":
			gc.spec.Tenant = val
		case "profile":
			gc.spec.Profile = val
		case "harness":
			gc.spec.Harness = val
		case "model":
			gc.spec.Model = val
			if val == "none" {
				gc.spec.Model = ""
			}
		case "readonly":
			gc.readOnly = val
		case "owner":
			gc.spec.Owner = val == "true"
		case "env":
			k, v, _ := strings.Cut(val, "=")
			gc.env[k] = v
		case "refused":
			gc.refused = val
		case "explain":
			tool, filter, _ := strings.Cut(val, "=")
			gc.explains[strings.TrimSpace(tool)] = surface.Filter(strings.TrimSpace(filter))
		case "gate":
			tool, want, _ := strings.Cut(val, "=")
			gc.gates[strings.TrimSpace(tool)] = strings.TrimSpace(want)
		default:
			t.Fatalf("%s:%d: unknown key %q", path, n, key)
		}
	}
	if gc.tools == nil && gc.refused == "" {
		t.Fatalf("%s: neither tools: nor refused:", path)
	}
	return gc
}

func loadScout(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Load("../examples/scout/warden.yaml")
	if err != nil {
		t.Fatalf("load the Scout example: %v", err)
	}
	return p
}

func TestScoutGolden(t *testing.T) {
	p := loadScout(t)
	files, err := filepath.Glob("testdata/scout/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".golden")
		t.Run(name, func(t *testing.T) {
			gc := parseGolden(t, file)
			env := p.Env(policy.MapLookup(gc.env))
			s, err := surface.Open(env, gc.spec)
			if gc.refused != "" {
				if err == nil {
					t.Fatalf("session opened with %d tools; want it refused (%q)", s.Len(), gc.refused)
				}
				if !errors.Is(err, surface.ErrRefused) || !strings.Contains(err.Error(), gc.refused) {
					t.Fatalf("error %q; want a refusal mentioning %q", err, gc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if ro, why := s.ReadOnly(); ro != (gc.readOnly != "" || gc.spec.Role == "read_only") || !strings.Contains(why, gc.readOnly) {
				t.Errorf("read-only route: %v (%s); want %q", ro, why, gc.readOnly)
			}
			got, want := s.Tools(), slices.Clone(gc.tools)
			slices.Sort(got)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
				for _, name := range missingFrom(got, want) {
					t.Logf("absent %s: %+v", name, s.Explain(name))
				}
			}
			for tool, filter := range gc.explains {
				if e := s.Explain(tool); e.Given || e.Filter != filter {
					t.Errorf("Explain(%s) = %+v; want removed by %s", tool, e, filter)
				}
			}
			for tool, want := range gc.gates {
				g := s.Gate(tool)
				got := g.Decision.String()
				if g.Code != "" && g.Code != verdict.ApprovalRequired {
					got += " " + string(g.Code)
				}
				if got != want {
					t.Errorf("Gate(%s) = %q (%s); want %q", tool, got, g.Reason, want)
				}
			}
			checkExplainAgrees(t, s)
		})
	}
}

func missingFrom(got, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// checkExplainAgrees checks that Explain, which re-derives each decision step by step, agrees
// with the surface Open computed for every tool of the policy.
func checkExplainAgrees(t *testing.T, s *surface.Surface) {
	t.Helper()
	for tool := range s.Policy().Tools() {
		e := s.Explain(tool.Name)
		if strings.Contains(e.Reason, "inconsistent") || e.Given != s.Has(tool.Name) {
			t.Errorf("Explain(%s) = %+v disagrees with the surface (has=%v)", tool.Name, e, s.Has(tool.Name))
		}
		if !e.Given && e.Filter == "" {
			t.Errorf("Explain(%s): absent with no filter", tool.Name)
		}
		if e.Reason == "" {
			t.Errorf("Explain(%s): no reason", tool.Name)
		}
	}
}
