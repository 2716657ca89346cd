//go:build !purego

#include "textflag.h"

// gramBytes picks, for each of eight quadwords, the five bytes of the gram at 4i: bytes 4i to
// 4i+4 of the source (the other three are zeroed by a mask).
DATA gramBytes<>+0(SB)/8, $0x0000000403020100
DATA gramBytes<>+8(SB)/8, $0x0000000807060504
DATA gramBytes<>+16(SB)/8, $0x0000000c0b0a0908
DATA gramBytes<>+24(SB)/8, $0x000000100f0e0d0c
DATA gramBytes<>+32(SB)/8, $0x0000001413121110
DATA gramBytes<>+40(SB)/8, $0x0000001817161514
DATA gramBytes<>+48(SB)/8, $0x0000001c1b1a1918
DATA gramBytes<>+56(SB)/8, $0x000000201f1e1d1c
GLOBL gramBytes<>(SB), RODATA|NOPTR, $64

// func firstStagesAVX512(text *byte, n int, words *uint64, fmask uint64, from int, out *int32, room int) (next, found int)
//
// Probes the first filter at from, from+4, ... sixteen grams a step (two vectors of eight),
// while a step's bytes are within n and out has room for a step's sixteen positions, and
// writes to out the position of every gram the filter may hold; it returns where it stopped
// and how many it wrote. See firstStages, which it must agree with: h = gram * hashMul; word
// h>>40 & fmask; bits h>>20 & 63, h>>26 & 63 and h>>32 & 63.
TEXT ·firstStagesAVX512(SB), NOSPLIT, $0-72
	MOVQ text+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ words+16(FP), DI
	MOVQ fmask+24(FP), AX
	MOVQ from+32(FP), DX
	MOVQ out+40(FP), R8
	MOVQ room+48(FP), R10
	XORQ R9, R9
	SUBQ $16, R10 // a step writes at most 16

	VPBROADCASTQ AX, Z20 // fmask
	MOVQ         $0x9E3779B97F4A7C15, AX
	VPBROADCASTQ AX, Z21 // hashMul
	MOVQ         $63, AX
	VPBROADCASTQ AX, Z22
	MOVQ         $1, AX
	VPBROADCASTQ AX, Z23
	VMOVDQU64    gramBytes<>(SB), Z24
	MOVQ         $0x1f1f1f1f1f1f1f1f, AX
	KMOVQ        AX, K1

	SUBQ $65, CX // a step reads grams up to p+60..p+64

loop:
	CMPQ DX, CX
	JGT  done
	CMPQ R9, R10
	JGT  done
	LEAQ (SI)(DX*1), BX

	VPERMB.Z (BX), Z24, K1, Z0
	VPERMB.Z 32(BX), Z24, K1, Z1
	VPMULLQ  Z21, Z0, Z0
	VPMULLQ  Z21, Z1, Z1

	// words
	VPSRLQ $40, Z0, Z2
	VPSRLQ $40, Z1, Z3
	VPANDQ Z20, Z2, Z2
	VPANDQ Z20, Z3, Z3
	KXNORB K2, K2, K2
	KXNORB K3, K3, K3
	VPGATHERQQ (DI)(Z2*8), K2, Z4
	VPGATHERQQ (DI)(Z3*8), K3, Z5

	// the three bits of each gram
	VPSRLQ    $20, Z0, Z6
	VPSRLQ    $26, Z0, Z7
	VPSRLQ    $32, Z0, Z10
	VPANDQ    Z22, Z6, Z6
	VPANDQ    Z22, Z7, Z7
	VPANDQ    Z22, Z10, Z10
	VPSLLVQ   Z6, Z23, Z6
	VPSLLVQ   Z7, Z23, Z7
	VPSLLVQ   Z10, Z23, Z10
	VPTERNLOGQ $0xfe, Z10, Z7, Z6 // Z6 | Z7 | Z10
	VPSRLQ    $20, Z1, Z8
	VPSRLQ    $26, Z1, Z9
	VPSRLQ    $32, Z1, Z11
	VPANDQ    Z22, Z8, Z8
	VPANDQ    Z22, Z9, Z9
	VPANDQ    Z22, Z11, Z11
	VPSLLVQ   Z8, Z23, Z8
	VPSLLVQ   Z9, Z23, Z9
	VPSLLVQ   Z11, Z23, Z11
	VPTERNLOGQ $0xfe, Z11, Z9, Z8 // Z8 | Z9 | Z11

	// a gram passes where its bits are all set in its word: bits &^ word == 0
	VPANDNQ   Z6, Z4, Z6
	VPANDNQ   Z8, Z5, Z8
	VPTESTNMQ Z6, Z6, K4
	VPTESTNMQ Z8, Z8, K5
	KMOVB     K4, AX
	KMOVB     K5, BX
	SHLL      $8, BX
	ORL       BX, AX
	JZ        next

hits:
	TZCNTL AX, BX
	LEAQ   (DX)(BX*4), R12
	MOVL   R12, (R8)(R9*4)
	INCQ   R9
	BLSRL  AX, AX
	JNZ    hits

next:
	ADDQ $64, DX
	JMP  loop

done:
	VZEROUPPER
	MOVQ DX, next+56(FP)
	MOVQ R9, found+64(FP)
	RET

// func hexMasksAVX512(text *byte, nblocks int, lo, hi uint64, masks *uint64)
//
// For each 64-byte block j of text, folded to lower case (| 0x20): bit i of masks[2j], byte
// i is a hex digit or 'x'; bit i of masks[2j+1], byte i is in [lo, hi] or is '0'. See
// hexMasks.
TEXT ·hexMasksAVX512(SB), NOSPLIT, $0-40
	MOVQ text+0(FP), SI
	MOVQ nblocks+8(FP), CX
	MOVQ lo+16(FP), AX
	MOVQ hi+24(FP), BX
	MOVQ masks+32(FP), DI
	VPBROADCASTB AX, Z1
	VPBROADCASTB BX, Z2
	MOVL         $0x20, AX
	VPBROADCASTB AX, Z3
	MOVL         $0x30, AX
	VPBROADCASTB AX, Z4
	MOVL         $0x0A, AX
	VPBROADCASTB AX, Z5
	MOVL         $0x61, AX
	VPBROADCASTB AX, Z6
	MOVL         $0x06, AX
	VPBROADCASTB AX, Z7
	MOVL         $0x78, AX
	VPBROADCASTB AX, Z8

	TESTQ CX, CX
	JZ    done

loop:
	VMOVDQU64 (SI), Z0
	VPORQ     Z3, Z0, Z0

	// hex digits and 'x'
	VPSUBB   Z4, Z0, Z9
	VPCMPUB  $1, Z5, Z9, K1 // b-'0' < 10
	VPSUBB   Z6, Z0, Z9
	VPCMPUB  $1, Z7, Z9, K2 // b-'a' < 6
	KORQ     K1, K2, K1
	VPCMPEQB Z8, Z0, K2     // 'x'
	KORQ     K1, K2, K1
	KMOVQ    K1, (DI)

	// high nibbles of value bytes, and '0'
	VPCMPUB  $5, Z1, Z0, K1 // >= lo
	VPCMPUB  $2, Z2, Z0, K2 // <= hi
	KANDQ    K1, K2, K1
	VPCMPEQB Z4, Z0, K2     // '0'
	KORQ     K1, K2, K1
	KMOVQ    K1, 8(DI)

	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET
