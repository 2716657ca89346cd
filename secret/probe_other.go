//go:build !amd64 || purego

package secret

// vectorProbe reports whether the first filter's probes run on vector instructions.
const vectorProbe = false

// firstStageAVX512 is not called without vectorProbe.
func firstStageAVX512(text *byte, n int, words *uint64, fmask uint64, from int) int {
	panic("secret: no vector probes")
}
