package secret_test

import (
	"os"
	"testing"

	"github.com/wardenhq/warden/secret"
)

// TestPhaseTimes times each phase of a scan over each clean corpus with 1,000 values, to see
// where redaction's time goes: PHASES=1 go test -run PhaseTimes -v ./secret/
func TestPhaseTimes(t *testing.T) {
	if os.Getenv("PHASES") == "" {
		t.Skip("PHASES=1 times the phases of a scan")
	}
	r := secret.NewRegistry(testScope)
	var envelopes []any
	for _, v := range realisticValues(1000) {
		envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
	}
	if _, err := r.Protect(envelopes); err != nil {
		t.Fatal(err)
	}
	cs := corpora(1 << 20)
	for _, name := range []string{"prose", "code", "json", "logs", "gitlog", "base64"} {
		t.Logf("%s: %s", name, secret.PhaseTimes(r, cs[name], 30))
	}
}
