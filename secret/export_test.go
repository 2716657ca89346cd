package secret

import (
	"fmt"
	"time"
)

// PhaseTimes times the phases of a scan of text, best of n runs, in MB/s: the first pass, the
// probes of the main index, the runs found, probed for hex forms and judged for decoding, the
// decoded runs scanned and the escapes checked (a development aid; see TestPhaseTimes).
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
		sc.probeHex(m.ix8, &sc.cls)
		sc.runs(&sc.cls)
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
	return fmt.Sprintf("first pass %s, probes %s, runs %s, decoded runs %s, escapes %s MB/s",
		mb(best[0]), mb(best[1]), mb(best[2]), mb(best[3]), mb(best[4]))
}

// Scans returns a scan of text as it was, its runs found into lists and then probed and judged
// from them (findRunsRef, probeHexRunsRef, decodeRunsRef), and as it is (find), for
// BenchmarkScanRuns to alternate in one process. Both find nothing in a clean text; the
// decoded views and escapes, the same code in both, are scanned by both.
func Scans(r *Registry, text string) (ref, now func()) {
	m := r.st.shared.m.Load()
	sc := &scanner{m: m}
	var hexRuns, b64Runs []span
	ref = func() {
		sc.matches = sc.matches[:0]
		c := &sc.cls
		c.classify(text)
		sc.probe5(m.ix5, c)
		hexRuns, b64Runs = c.findRunsRef(hexRuns[:0], b64Runs[:0])
		sc.probeHexRunsRef(m.ix8, c, hexRuns)
		sc.decodeRunsRef(text, hexRuns, b64Runs)
		sc.decodeRuns(text)
		if escapes, _ := sc.escapesMatter(text); escapes {
			panic("secret: Scans is for texts without escapes that matter")
		}
	}
	now = func() {
		sc.matches = sc.matches[:0]
		sc.find(text)
	}
	return ref, now
}
