//go:build !purego

#include "textflag.h"

// func classifyAVX512(src *byte, nblocks int, dst *byte, masks *uint64) int
//
// Per 64-byte block: K1 = separators (bytes <= 0x20, ':', ',', '-'); the other bytes are
// compressed to dst and their mask stored as keep; hexRun = separators, hex digits, 'x', 'X';
// special = '%', '&', '\\', 0xE2, 0xEF; base64 = letters, digits, '+', '/'. See classify.go.
TEXT ·classifyAVX512(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ nblocks+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ masks+24(FP), R8
	MOVQ DI, R9

	MOVL $0x20, AX
	VPBROADCASTB AX, Z20
	MOVL $0x3A, AX
	VPBROADCASTB AX, Z21
	MOVL $0x2C, AX
	VPBROADCASTB AX, Z22
	MOVL $0x30, AX
	VPBROADCASTB AX, Z23
	MOVL $0x0A, AX
	VPBROADCASTB AX, Z24
	MOVL $0x61, AX
	VPBROADCASTB AX, Z25
	MOVL $0x06, AX
	VPBROADCASTB AX, Z26
	MOVL $0x78, AX
	VPBROADCASTB AX, Z27
	MOVL $0x25, AX
	VPBROADCASTB AX, Z28
	MOVL $0x02, AX
	VPBROADCASTB AX, Z29
	MOVL $0x5C, AX
	VPBROADCASTB AX, Z30
	MOVL $0xE2, AX
	VPBROADCASTB AX, Z31
	MOVL $0xEF, AX
	VPBROADCASTB AX, Z19
	MOVL $0x1A, AX
	VPBROADCASTB AX, Z18
	MOVL $0x2B, AX
	VPBROADCASTB AX, Z17
	MOVL $0x2F, AX
	VPBROADCASTB AX, Z16

	TESTQ CX, CX
	JZ    done

loop:
	VMOVDQU64 (SI), Z0

	// separators
	VPCMPUB  $2, Z20, Z0, K1 // b <= 0x20
	VPCMPEQB Z21, Z0, K2     // ':'
	KORQ     K1, K2, K1
	VPSUBB   Z22, Z0, Z1
	VPCMPUB  $1, Z29, Z1, K2 // b-',' < 2: ',' or '-'
	KORQ     K1, K2, K1

	// keep: compress the other bytes to dst
	KNOTQ       K1, K3
	VPCOMPRESSB Z0, K3, Z2
	VMOVDQU64   Z2, (DI)
	KMOVQ       K3, AX
	MOVQ        AX, (R8)
	POPCNTQ     AX, AX
	ADDQ        AX, DI

	// hexRun: separators, digits, a-f, A-F, x, X
	VPSUBB   Z23, Z0, Z1
	VPCMPUB  $1, Z24, Z1, K4 // digits: b-'0' < 10
	KORQ     K1, K4, K1
	VPORQ    Z20, Z0, Z1     // b|0x20 folds A-F and X
	VPCMPEQB Z27, Z1, K2     // 'x'
	KORQ     K1, K2, K1
	VPSUBB   Z25, Z1, Z1
	VPCMPUB  $1, Z26, Z1, K2 // (b|0x20)-'a' < 6
	KORQ     K1, K2, K1
	KMOVQ    K1, 8(R8)

	// base64: digits, letters ((b|0x20)-'a' < 26), '+', '/'
	VPCMPUB  $1, Z18, Z1, K2
	KORQ     K4, K2, K4
	VPCMPEQB Z17, Z0, K2
	KORQ     K4, K2, K4
	VPCMPEQB Z16, Z0, K2
	KORQ     K4, K2, K4
	KMOVQ    K4, 24(R8)

	// special: '%', '&', '\\', 0xE2, 0xEF
	VPSUBB   Z28, Z0, Z1
	VPCMPUB  $1, Z29, Z1, K1 // b-'%' < 2: '%' or '&'
	VPCMPEQB Z30, Z0, K2
	KORQ     K1, K2, K1
	VPCMPEQB Z31, Z0, K2
	KORQ     K1, K2, K1
	VPCMPEQB Z19, Z0, K2
	KORQ     K1, K2, K1
	KMOVQ    K1, 16(R8)

	ADDQ $64, SI
	ADDQ $32, R8
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	SUBQ R9, DI
	MOVQ DI, ret+32(FP)
	RET
