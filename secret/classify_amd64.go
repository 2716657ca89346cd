//go:build !purego

package secret

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// vectorClassify: the first pass compacts with VPCOMPRESSB (AVX-512 VBMI2) and compares
// with AVX-512BW, 64 bytes per step. Without them it runs in Go.
var vectorClassify = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasPOPCNT

// classifyAVX512 classifies nblocks 64-byte blocks at src, writing four masks per block and
// the kept bytes from dst on; it returns how many bytes it kept. dst has 64 bytes of room past
// the last kept byte.
//
//go:noescape
func classifyAVX512(src *byte, nblocks int, dst *byte, masks *uint64) int

// classifyBlocks classifies whole 64-byte blocks; see classifyGo.
func classifyBlocks(src string, dst []byte, masks []uint64) int {
	nblocks := len(src) / 64
	if !vectorClassify || nblocks == 0 {
		return classifyGo(src, dst, 0, masks)
	}
	// Bounds the assembly relies on: the masks of every block, and a full vector store at the
	// last possible write position.
	_ = masks[nblocks*masksPerBlock-1]
	_ = dst[len(src)+63]
	return classifyAVX512(unsafe.StringData(src), nblocks, &dst[0], &masks[0])
}
