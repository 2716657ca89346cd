// Package feed follows a store's change feed: register a watch, read what it guards, wait
// for the next change, again, until the context ends. The gateway's token revocations and the
// tenants' stored hard blocks are both kept up to date this way.
package feed

import (
	"context"
	"log/slog"
	"time"
)

// Follow runs until ctx ends. Each round registers the watch first and reads second, so a
// change between the two is not missed; after a good read it calls read (if not nil) and
// waits for the watch to fire. A watch or read that fails is logged (what says what could
// not be followed) and tried again after a pause that doubles up to 5 s; what was read
// before stays in force meanwhile.
func Follow(ctx context.Context, logger *slog.Logger, what string,
	watch func(context.Context) (<-chan struct{}, error), load func(context.Context) error, read func()) {
	const first, most = 50 * time.Millisecond, 5 * time.Second
	pause := first
	for ctx.Err() == nil {
		ch, err := watch(ctx)
		if err == nil {
			err = load(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Warn(what+" could not be followed; trying again", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, most)
			continue
		}
		pause = first
		if read != nil {
			read()
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}
