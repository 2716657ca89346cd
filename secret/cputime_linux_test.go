package secret_test

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTimer starts measuring the CPU time of the benchmark's thread; the function it returns
// reports the throughput of n bytes per op over that CPU time as cpu-MB/s, which a shared
// machine's waiting does not inflate as it does the wall clock's MB/s.
func cpuTimer(b *testing.B, n int) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		d := threadCPU() - start
		runtime.UnlockOSThread()
		if d > 0 {
			b.ReportMetric(float64(b.N)*float64(n)/d.Seconds()/1e6, "cpu-MB/s")
		}
	}
}

// threadCPU is the thread's CPU time from CLOCK_THREAD_CPUTIME_ID, to the nanosecond: the
// thread times of getrusage advance in scheduler ticks on some kernels, too coarse for a run
// of a few hundred milliseconds.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
