package secret_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/secret"
)

// benchText is 16 KiB of tool output: log lines with ids, paths, base64 and hex, the kind of
// text whose letters and digits start many of the patterns.
func benchText() string {
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < 16<<10 {
		fmt.Fprintf(&b, "2026-11-30T12:%02d:%02dZ INFO req=%08x path=/srv/app/%d/data.json user=u%d sha=%016x body=%s\n",
			rng.IntN(60), rng.IntN(60), rng.Uint32(), rng.IntN(1000), rng.IntN(100), rng.Uint64(),
			"eyJhbGciOiJIUzI1NiJ9"[:8+rng.IntN(12)])
	}
	return b.String()[:16<<10]
}

// benchValues are n realistic secrets: tokens, passwords, keys.
func benchValues(n int) []string {
	rng := rand.New(rand.NewPCG(9, 9))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]string, n)
	for i := range out {
		prefix := []string{"ghp_", "sk-", "xoxb-", "AKIA", "pw:"}[i%5]
		b := []byte(prefix)
		for range 20 + rng.IntN(20) {
			b = append(b, alnum[rng.IntN(len(alnum))])
		}
		out[i] = string(b)
	}
	return out
}

func BenchmarkRedact16KiB(b *testing.B) {
	text := benchText()
	for _, n := range []int{0, 20} {
		r := secret.NewRegistry(testScope)
		for _, v := range benchValues(n) {
			r.Add(secret.TypeToken, secret.New(v))
		}
		b.Run(fmt.Sprintf("values=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if r.Redact(text) != text {
					b.Fatal("a match in a text without values")
				}
			}
		})
	}
	// The same text with one value in every 2 KiB.
	r := secret.NewRegistry(testScope)
	vals := benchValues(20)
	for _, v := range vals {
		r.Add(secret.TypeToken, secret.New(v))
	}
	withHits := []byte(text)
	for i := 0; i+64 < len(withHits); i += 2 << 10 {
		copy(withHits[i:], vals[i%20])
	}
	hits := string(withHits)
	b.Run("values=20,hits=8", func(b *testing.B) {
		b.SetBytes(int64(len(hits)))
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Redact(hits)
		}
	})
}

// benchResult is a 2 KiB tool result: a list of records, two of them with envelopes.
func benchResult(b *testing.B, envelopes bool) any {
	var items []string
	for i := range 15 {
		items = append(items, fmt.Sprintf(`{"id": %d, "name": "service-%d", "url": "https://api.example.com/v1/services/%d", "tags": ["prod", "eu-west-1"], "healthy": true}`, i, i, i))
	}
	if envelopes {
		items = append(items, `{"id": 100, "token": {"$wardenSensitive": {"type": "token", "value": "ghp_0123456789abcdefghijABCDEFGHIJ"}}}`,
			`{"id": 101, "password": {"$burrowSensitive": {"type": "password", "value": "correct horse battery staple"}}}`)
	}
	s := `{"result": {"items": [` + strings.Join(items, ", ") + `], "next": null}}`
	if len(s) < 1900 || len(s) > 2300 {
		b.Fatalf("the result is %d bytes; want about 2 KiB", len(s))
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkProtect2KiB(b *testing.B) {
	b.Run("no envelope", func(b *testing.B) {
		r := secret.NewRegistry(testScope)
		r.Add(secret.TypeToken, secret.New("some-known-token-value"))
		v := benchResult(b, false)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Protect(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two envelopes, new registry", func(b *testing.B) {
		v := benchResult(b, true)
		b.ReportAllocs()
		for b.Loop() {
			r := secret.NewRegistry(testScope)
			if _, err := r.Protect(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two envelopes, values known", func(b *testing.B) {
		v := benchResult(b, true)
		r := secret.NewRegistry(testScope)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Protect(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	vals := benchValues(20)
	b.ReportAllocs()
	for b.Loop() {
		r := secret.NewRegistry(testScope)
		for _, v := range vals {
			r.Add(secret.TypeToken, secret.New(v))
		}
	}
}

// BenchmarkRedactRepetitive is the case that makes a forward leftmost-longest search
// quadratic: a value that is a long repetition of another, in a text that repeats both
// without completing the long one. Redact stays linear.
func BenchmarkRedactRepetitive(b *testing.B) {
	r := secret.NewRegistry(testScope)
	r.Add(secret.TypeToken, secret.New("abcd"))
	r.Add(secret.TypeToken, secret.New(strings.Repeat("abcd", 2000)+"!"))
	text := strings.Repeat("abcd", 4096) // 16 KiB
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Redact(text)
	}
}

// BenchmarkRedactClean is redaction with 1,000 known values (realisticValues) of text that holds
// none of them, for each clean corpus: the case that costs every result. cpu-MB/s divides by the
// CPU time of the benchmark's thread rather than the wall clock, which a shared machine
// inflates.
func BenchmarkRedactClean(b *testing.B) {
	r := secret.NewRegistry(testScope)
	var envelopes []any
	for _, v := range realisticValues(1000) {
		envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
	}
	if _, err := r.Protect(envelopes); err != nil {
		b.Fatal(err)
	}
	cs := corpora(1 << 20)
	runtime.GC()
	for _, name := range []string{"prose", "code", "json", "logs", "gitlog", "base64", "mixed"} {
		text := cs[name]
		b.Run("values=1000/"+name, func(b *testing.B) {
			if got := r.Redact(text); got != text {
				b.Fatal("a match in a text without values")
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			stop := cpuTimer(b, len(text))
			for b.Loop() {
				_ = r.Redact(text)
			}
			stop()
		})
	}
}

// BenchmarkProtectOneMore is the cost of learning one new value when a Shared already holds
// 1,000: what a result that declares a value pays.
func BenchmarkProtectOneMore(b *testing.B) {
	tenant := secret.NewShared(secret.SharedOptions{})
	r := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
	var envelopes []any
	for _, v := range realisticValues(1000) {
		envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
	}
	if _, err := r.Protect(envelopes); err != nil {
		b.Fatal(err)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		other := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
		v := fmt.Sprintf("sk-new-value-%08d-Xq7Lm2Zp", i)
		i++
		if _, err := other.Protect(map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}}); err != nil {
			b.Fatal(err)
		}
		other.Forget()
	}
}

// BenchmarkScanRuns compares a scan of a text as it was, its runs found into lists and then
// probed and judged from them, with the scan as it is (secret.Scans), on the clean corpora with
// 1,000 values. The two alternate in one process, an iteration each, so that a shared
// machine's load weighs on both alike; each reports cpu-MB/s over its own thread CPU time, and
// speedup the ratio of the two.
func BenchmarkScanRuns(b *testing.B) {
	r := secret.NewRegistry(testScope)
	var envelopes []any
	for _, v := range realisticValues(1000) {
		envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
	}
	if _, err := r.Protect(envelopes); err != nil {
		b.Fatal(err)
	}
	cs := corpora(1 << 20)
	for _, name := range []string{"prose", "code", "json", "logs", "gitlog", "base64", "mixed"} {
		text := cs[name]
		b.Run("values=1000/"+name, func(b *testing.B) {
			ref, now := secret.Scans(r, text)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var tRef, tNow time.Duration
			for b.Loop() {
				t0 := threadCPU()
				ref()
				t1 := threadCPU()
				now()
				t2 := threadCPU()
				tRef, tNow = tRef+t1-t0, tNow+t2-t1
			}
			if tRef > 0 && tNow > 0 {
				mb := func(d time.Duration) float64 { return float64(b.N) * float64(len(text)) / d.Seconds() / 1e6 }
				b.ReportMetric(mb(tRef), "old-cpu-MB/s")
				b.ReportMetric(mb(tNow), "new-cpu-MB/s")
				b.ReportMetric(tRef.Seconds()/tNow.Seconds(), "speedup")
			}
		})
	}
}
