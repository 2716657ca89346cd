package review_test

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTimer starts measuring the CPU time of the benchmark's thread, system calls included; the
// function it returns reports it per op as cpu-ns/op, which a shared machine's waiting does not
// inflate as it does the wall clock's ns/op.
func cpuTimer(b *testing.B) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		d := threadCPU() - start
		runtime.UnlockOSThread()
		if d > 0 && b.N > 0 {
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// threadCPU is the thread's CPU time from CLOCK_THREAD_CPUTIME_ID, to the nanosecond.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
