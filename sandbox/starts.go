package sandbox

import "sync/atomic"

// starts counts the commands this process has started in the sandbox.
var starts atomic.Uint64

// Starts returns how many commands this process has started in the sandbox so far: commands
// that ran confined, not those the sandbox refused or could not apply, nor those run with the
// sandbox off. It is one count for the whole process (every caller of Run and Start), for
// metrics.
func Starts() uint64 { return starts.Load() }
