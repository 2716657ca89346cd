package secret

import (
	"strings"
	"testing"
)

func BenchmarkClassify(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog, 0x1f and deadbeef-cafe; 50% & more.\n", 1<<14)
	var c classification
	b.Run("vector", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			c.classify(text)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		masks := make([]uint64, (len(text)/64+1)*masksPerBlock)
		dst := make([]byte, len(text)+padding)
		for b.Loop() {
			classifyGo(text, dst, 0, masks)
		}
	})
}
