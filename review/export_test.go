package review

import "time"

// The tests judge corpora on a loaded machine, where a walk could run past its time now and
// then and turn an allow into the conservative answer: only the count bounds a walk in tests,
// so a command is judged alike in every run.
func init() { maxTreeTime = time.Hour }

// MemoCounts reports how many reviews r took from what it kept, and how many it kept.
func (r *Reviewer) MemoCounts() (hits, kept int64) { return r.memo.hits.Load(), r.memo.kept.Load() }

// DirsHits reports how many answers r's reviews took from what earlier reviews found in
// directories (action.Dirs).
func (r *Reviewer) DirsHits() int64 { return r.dirs.Hits() }
