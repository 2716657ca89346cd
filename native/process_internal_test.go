package native

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		max   int64
		total int
	}{
		{max: 100, total: 0},
		{max: 100, total: 50},
		{max: 100, total: 75},
		{max: 100, total: 100},
		{max: 100, total: 101},
		{max: 100, total: 10000},
		{max: 1, total: 10},
		{max: 4, total: 4},
		{max: 4, total: 1000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d of %d", tt.total, tt.max), func(t *testing.T) {
			src := make([]byte, tt.total)
			for i := range src {
				src[i] = byte('a' + i%26)
			}
			rng := rand.New(rand.NewPCG(1, uint64(tt.total)))
			c := newCapture(tt.max)
			for rest := src; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(40))
				c.Write(rest[:k])
				rest = rest[k:]
			}
			head, tail, dropped := c.parts()
			headMax := int(tt.max - tt.max/4)
			wantHead := src[:min(len(src), headMax)]
			rest := src[len(wantHead):]
			wantTail := rest[max(0, len(rest)-int(tt.max/4)):]
			if !bytes.Equal(head, wantHead) || !bytes.Equal(tail, wantTail) {
				t.Errorf("kept %q + %q, want %q + %q", head, tail, wantHead, wantTail)
			}
			if want := int64(len(src) - len(wantHead) - len(wantTail)); dropped != want {
				t.Errorf("dropped %d, want %d", dropped, want)
			}
		})
	}
}
