package group

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

// TestBatchesUnderLoad: concurrent callers are written together, each exactly once, and each
// learns its own result.
func TestBatchesUnderLoad(t *testing.T) {
	var mu sync.Mutex
	written := map[int]int{}
	batches := 0
	release := make(chan struct{})
	first := true
	c := New(64, func(batch []int) error {
		mu.Lock()
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-release // hold the first batch so that the others queue behind it
		}
		mu.Lock()
		defer mu.Unlock()
		batches++
		for _, v := range batch {
			written[v]++
		}
		return nil
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Do(-1) }()
	// Wait until the first batch is being written, then queue 100 more behind it.
	for {
		c.mu.Lock()
		leading := c.leading && len(c.queue) == 0
		c.mu.Unlock()
		if leading {
			break
		}
		runtime.Gosched()
	}
	queued := make(chan struct{}, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			queued <- struct{}{}
			if err := c.Do(i); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 100 {
		<-queued
	}
	for { // every caller is in the queue (a caller past queued may not have locked yet)
		c.mu.Lock()
		n := len(c.queue)
		c.mu.Unlock()
		if n == 100 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if len(written) != 101 {
		t.Fatalf("%d items written, want 101", len(written))
	}
	for v, n := range written {
		if n != 1 {
			t.Errorf("item %d written %d times", v, n)
		}
	}
	// 1 held batch, then 100 queued items in batches of at most 64: 2 more.
	if batches != 3 {
		t.Errorf("%d batches, want 3", batches)
	}
}

// TestFailedBatchIsRetriedAlone: one bad item fails only its own caller.
func TestFailedBatchIsRetriedAlone(t *testing.T) {
	bad := errors.New("bad item")
	c := New(8, func(batch []int) error {
		for _, v := range batch {
			if v == 3 {
				return bad
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.Do(i) }()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 3) != errors.Is(err, bad) {
			t.Errorf("item %d: err %v", i, err)
		}
	}
}
