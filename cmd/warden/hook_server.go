package main

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/claudecode"
)

// remote answers through warden serve's review API.
func (o *hookOptions) remote(ctx context.Context, ev *claudecode.Event) (*claudecode.Answer, error) {
	return nil, fmt.Errorf("--server: not built yet")
}
