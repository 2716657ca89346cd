package review

import "time"

// The tests judge corpora on a loaded machine, where a walk could run past its time now and
// then and turn an allow into the conservative answer: only the count bounds a walk in tests,
// so a command is judged alike in every run.
func init() { maxTreeTime = time.Hour }
