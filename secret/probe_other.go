//go:build !amd64 || purego

package secret

// vectorProbe reports whether the first filter's probes run on vector instructions.
const vectorProbe = false

// firstStageAVX512 is not called without vectorProbe.
func firstStageAVX512(text *byte, n int, words *uint64, fmask uint64, from int) int {
	panic("secret: no vector probes")
}

// vectorHex reports whether the windows of hex runs are judged on vector instructions.
const vectorHex = false

// hexOkAVX512 is not called without vectorHex.
func hexOkAVX512(p *byte, lo, hi uint64) uint64 {
	panic("secret: no vector hex windows")
}
