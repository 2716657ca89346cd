package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/wardenhq/warden/secret"
)

// redactionResult is Redact's throughput on one corpus with some number of known values.
type redactionResult struct {
	corpus string
	values int
	bytes  int
	wallNs float64 // per pass over the corpus
	cpuNs  float64 // the process's CPU time per pass
}

func (r redactionResult) mbPerSecond() float64 {
	return float64(r.bytes) / 1e6 / (r.wallNs / 1e9)
}

// redactionValues are the numbers of known values measured; 0 is the baseline (a registry
// with nothing to find returns the text at once), 1 the floor of a registry that must look.
var redactionValues = []int{0, 1, 100, 1000}

var corpusNames = []string{"prose", "code", "json", "logs"}

// corpus returns about size bytes of one kind of tool output, the same on every run.
func corpus(name string, size int) string {
	r := rand.New(rand.NewPCG(15, uint64(len(name))))
	word := func() string { return words[r.IntN(len(words))] }
	var b strings.Builder
	for b.Len() < size {
		switch name {
		case "prose":
			fmt.Fprintf(&b, "The %s team moved the %s of %s to %s after the review of %d %s, and said so in the notes.\n",
				word(), word(), word(), word(), r.IntN(100), word())
		case "code":
			fmt.Fprintf(&b, "func (s *%sServer) %s(ctx context.Context, id int) error {\n\tif err := s.%s.Load(ctx, id+%d); err != nil {\n\t\treturn fmt.Errorf(\"%s %%d: %%w\", id, err)\n\t}\n\treturn nil\n}\n\n",
				word(), strings.ToUpper(word()[:1])+word(), word(), r.IntN(1000), word())
		case "json":
			fmt.Fprintf(&b, `{"id": %d, "name": "%s-%s", "url": "https://api.example.com/v1/%s/%d", "tags": ["%s", "eu-west-1"], "size": %d, "ok": true},`+"\n",
				r.IntN(1e6), word(), word(), word(), r.IntN(1e4), word(), r.IntN(1e9))
		case "logs":
			fmt.Fprintf(&b, "2026-11-30T12:%02d:%02dZ INFO %s req=%08x path=/srv/%s/%d/data.json user=u%d sha=%016x\n",
				r.IntN(60), r.IntN(60), word(), r.Uint32(), word(), r.IntN(1000), r.IntN(100), r.Uint64())
		}
	}
	return b.String()
}

// knownValues are n realistic secrets: tokens, keys and passwords of 24 to 43 characters.
func knownValues(n int) []string {
	r := rand.New(rand.NewPCG(9, 9))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]string, n)
	for i := range out {
		b := []byte([]string{"ghp_", "sk-", "xoxb-", "AKIA", "pw:"}[i%5])
		for range 20 + r.IntN(20) {
			b = append(b, alnum[r.IntN(len(alnum))])
		}
		out[i] = string(b)
	}
	return out
}

// runRedaction measures Redact, as the gateway calls it on every result, on corpora that hold
// none of the values: the case every result pays. A corpus that Redact changes is an error.
func runRedaction(size int, budget time.Duration, logf func(string, ...any)) ([]redactionResult, error) {
	scope := secret.Scope{Agent: "bench", Session: "bench", Conversation: "bench"}
	var out []redactionResult
	for _, n := range redactionValues {
		// The values arrive as envelopes in one result, as a producer declares them: the
		// index is built once for all of them.
		reg := secret.NewRegistry(scope)
		envelopes := make([]any, n)
		for i, v := range knownValues(n) {
			envelopes[i] = map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}}
		}
		if _, err := reg.Protect(envelopes); err != nil {
			return nil, fmt.Errorf("redaction: protecting %d values: %w", n, err)
		}
		for _, name := range corpusNames {
			text := corpus(name, size)
			if reg.Redact(text) != text {
				return nil, fmt.Errorf("redaction: the %s corpus holds one of %d values; it must hold none", name, n)
			}
			passes := 0
			cpu0, err := processCPU()
			if err != nil {
				return nil, err
			}
			t0 := time.Now()
			for passes == 0 || time.Since(t0) < budget {
				_ = reg.Redact(text)
				passes++
			}
			wall := time.Since(t0)
			cpu1, err := processCPU()
			if err != nil {
				return nil, err
			}
			res := redactionResult{corpus: name, values: n, bytes: len(text),
				wallNs: float64(wall.Nanoseconds()) / float64(passes), cpuNs: float64((cpu1 - cpu0).Nanoseconds()) / float64(passes)}
			logf("redaction: %d values, %s: %.1f MB/s", n, name, res.mbPerSecond())
			out = append(out, res)
		}
	}
	return out, nil
}
