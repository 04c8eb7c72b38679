/* SPDX-License-Identifier: MIT */
/*
 * Filler for libgp_keys_big.so: KEYLIB_FILL one-instruction functions, each
 * with its own symbol, so that loading the library's symbol table costs the
 * loader milliseconds (tests/bpf/e2e_hostile_loads.sh).
 */
	.text
	.macro gp_fill
	.type gp_fill_\@,@function
gp_fill_\@:
	ret
	.size gp_fill_\@,1
	.endm
	.rept KEYLIB_FILL
	gp_fill
	.endr
	.section .note.GNU-stack,"",@progbits
