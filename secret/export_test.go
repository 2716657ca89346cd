package secret

import (
	"fmt"
	"time"
)

// PhaseTimes times the phases of a scan of text, best of n runs, in MB/s: the first pass, the
// probes of the main index, the runs found and probed for hex forms, the decoded runs and the
// escapes checked (a development aid; see TestPhaseTimes).
func PhaseTimes(r *Registry, text string, n int) string {
	m := r.st.shared.m.Load()
	sc := &scanner{m: m}
	best := [5]time.Duration{1 << 62, 1 << 62, 1 << 62, 1 << 62, 1 << 62}
	for range n {
		sc.matches = sc.matches[:0]
		t0 := time.Now()
		sc.cls.classify(text)
		t1 := time.Now()
		sc.probe5(m.ix5, &sc.cls)
		t2 := time.Now()
		c := &sc.cls
		sc.hexRuns, sc.b64Runs = c.findRuns(sc.hexRuns[:0], sc.b64Runs[:0])
		sc.probeHexRuns(m.ix8, c)
		t3 := time.Now()
		sc.decodeRuns(text)
		t4 := time.Now()
		sc.escapesMatter(text)
		t5 := time.Now()
		for i, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), t5.Sub(t4)} {
			best[i] = min(best[i], d)
		}
	}
	mb := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(len(text))/max(d, 1).Seconds()/1e6) }
	return fmt.Sprintf("first pass %s, probes %s, hex runs %s, decoded runs %s, escapes %s MB/s",
		mb(best[0]), mb(best[1]), mb(best[2]), mb(best[3]), mb(best[4]))
}
