//go:build !amd64 || purego

package secret

// vectorProbe reports whether the first filter's probes run on vector instructions.
const vectorProbe = false

// firstStagesAVX512 is not called without vectorProbe.
func firstStagesAVX512(text *byte, n int, words *uint64, fmask uint64, from int, out *int32, room int) (next, found int) {
	panic("secret: no vector probes")
}

// vectorHex reports whether the hex masks are computed on vector instructions.
const vectorHex = false

// hexMasksAVX512 is not called without vectorHex.
func hexMasksAVX512(text *byte, nblocks int, lo, hi uint64, masks *uint64) {
	panic("secret: no vector hex masks")
}
