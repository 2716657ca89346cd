package secret_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/secret"
)

// TestConcurrent runs every method at once; go test -race checks the locking, and each
// goroutine checks that what it protected is redacted and resolves.
func TestConcurrent(t *testing.T) {
	r := secret.NewRegistry(testScope)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 25 {
				v := fmt.Sprintf("value-%d-%d", g, i)
				out, err := r.Protect(map[string]any{"k": map[string]any{"$wardenSensitive": map[string]any{"type": "token", "value": v}}, "echo": v})
				if err != nil {
					t.Error(err)
					return
				}
				m := out.(map[string]any)
				h := m["k"].(string)
				if m["echo"] != h {
					t.Errorf("echo = %v; want %s", m["echo"], h)
				}
				if got := r.Redact("x " + v + " y"); got != "x "+h+" y" {
					t.Errorf("Redact = %q", got)
				}
				if got, err := r.Resolve(map[string]string{"V": h}); err != nil || got["V"].Reveal() != v {
					t.Errorf("Resolve = %v", err)
				}
				_ = r.RedactValue([]any{v, map[string]any{v: v}})
			}
		})
	}
	wg.Go(func() {
		for i := range 25 {
			r.Add(secret.TypeCredential, secret.New(fmt.Sprintf("added-%d", i)))
			_ = r.Redact(strings.Repeat("added-1 value-1-1 ", 20))
		}
	})
	wg.Wait()
	if r.Len() != 6*25+25 {
		t.Errorf("Len = %d; want %d", r.Len(), 6*25+25)
	}

	// Forget racing with everything else.
	other := secret.NewRegistry(testScope)
	for range 4 {
		wg.Go(func() {
			for i := range 100 {
				h := other.Add(secret.TypeToken, secret.New(fmt.Sprintf("tok-%d", i)))
				_ = other.Redact("tok-1 tok-2")
				_, _ = other.Resolve(map[string]string{"T": h})
				if i%10 == 0 {
					other.Forget()
				}
			}
		})
	}
	wg.Wait()
}
