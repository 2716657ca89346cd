package postgres

import (
	"testing"
	"time"

	"github.com/wardenhq/warden/manage"
)

// The LISTEN connection is killed: an object watch wakes once the listener is back, though
// nothing was written (a write made while it was away would not have been heard), and a
// watch made after that wakes on another instance's write.
func TestObjectsWatchSurvivesListenerKill(t *testing.T) {
	a, b, _ := two(t)
	ctx := ctxT(t)
	ch1, err := a.WatchObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	terminate(t, a.hub.pid.Load())
	if !closedWithin(ch1, 10*time.Second) {
		t.Fatal("an object watch did not wake after its listener was killed and came back")
	}
	for a.hub.reconnect.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not reconnect")
		case <-time.After(5 * time.Millisecond):
		}
	}
	ch2, err := a.WatchObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutObject(ctx, &manage.Object{Kind: manage.KindTenant, ID: "t1", Tenant: "t1", Data: []byte(`{}`), Updated: t0}, 0); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(ch2, 10*time.Second) {
		t.Fatal("an object watch did not wake on another instance's write after the listener reconnected")
	}
	// A write's time keeps microseconds (t0 has nanoseconds on purpose); the store returns
	// what it keeps.
	got, err := a.Object(ctx, manage.KindTenant, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Truncate(time.Microsecond); !got.Updated.Equal(want) {
		t.Errorf("Updated = %v, want %v", got.Updated, want)
	}
}
