package approval

import (
	"context"
	"errors"
	"fmt"
)

// Cancel ends a pending card unanswered because the call waiting on it can no longer run (its
// session ended, its token was revoked): the card expires with ChannelCanceled, and the call
// waiting on it (on any instance sharing the store) wakes and is refused. A card already
// answered or expired is left as it is, and is not an error.
func (b *Broker) Cancel(ctx context.Context, id string) error {
	done, err := b.store.Resolve(ctx, id, Expired, "", "", ChannelCanceled, b.clock.Now())
	switch {
	case errors.Is(err, ErrNotPending):
		return nil
	case err != nil:
		return fmt.Errorf("cancel card %s: %w", id, err)
	}
	b.notify(done)
	return nil
}
