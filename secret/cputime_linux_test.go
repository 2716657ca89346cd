package secret_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"
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

func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
