/* 4-bit codes, two a byte, low nibble first (the public declarations are pdq/graph.h's; this
 * header gives them to the layers below ir/, e.g. the quantized checkpoint's reader). */
#ifndef PDQ_KERNELS_CODES4_H
#define PDQ_KERNELS_CODES4_H

#include <stddef.h>
#include <stdint.h>

/* uint4 storage, the one layout every part of pdq uses (graph constants, Circle's UINT4 buffers,
 * quantized checkpoints per row): two codes a byte, low nibble first, element i in byte i / 2;
 * an odd count leaves the last high nibble 0. A uint4 constant packs its flattened elements. */
void pdq_pack4(const uint8_t *codes, size_t n, uint8_t *packed);
void pdq_unpack4(const uint8_t *packed, size_t n, uint8_t *codes);
/* Codes [i0, i0 + n) of packed storage (i0 may be odd: a row of an odd-width matrix). */
void pdq_unpack4_at(const uint8_t *packed, size_t i0, size_t n, uint8_t *codes);
/* Writes n codes as elements [i0, i0 + n) of packed storage: an element of even index sets its
 * whole byte (high nibble 0), one of odd index its high nibble. Rows written in order, one after
 * another, give pdq_pack4's bytes for the whole matrix (an odd-width row starts mid-byte). */
void pdq_pack4_at(const uint8_t *codes, size_t n, uint8_t *packed, size_t i0);

#endif
