//go:build !purego

package secret

import "golang.org/x/sys/cpu"

// vectorProbe: the first filter's probes run sixteen at a time on AVX-512 (VBMI for the
// grams, DQ for the products, gathers for the words). Without them they run in Go.
var vectorProbe = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VBMI && cpu.X86.HasBMI1

// firstStagesAVX512 probes the first filter words (fmask+1 of them) at from, from+4, ... of
// text, which holds n bytes and padding more, sixteen probes a step while the step's grams are
// within n and out has room for sixteen more positions (room), and writes to out the positions
// whose grams the filter may hold. It returns where it stopped, and how many it wrote.
//
//go:noescape
func firstStagesAVX512(text *byte, n int, words *uint64, fmask uint64, from int, out *int32, room int) (next, found int)

// vectorHex: the hex masks of the compacted text are computed 64 bytes at a time on AVX-512
// (BW).
var vectorHex = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// hexMasksAVX512 writes two masks for each of nblocks 64-byte blocks at text (see hexMasks).
//
//go:noescape
func hexMasksAVX512(text *byte, nblocks int, lo, hi uint64, masks *uint64)
