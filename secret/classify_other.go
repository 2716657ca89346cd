//go:build !amd64 || purego

package secret

// classifyBlocks classifies whole 64-byte blocks; see classifyGo.
func classifyBlocks(src string, dst []byte, masks []uint64) int {
	return classifyGo(src, dst, 0, masks)
}

// vectorClassify reports whether the first pass runs on vector instructions.
const vectorClassify = false
