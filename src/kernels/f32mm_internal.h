/* What the f32 matmul's level files share (internal to src/kernels/): one function per level
 * computes a block y[i * ldy + j] (i < nx, j < nw) = x row i · w row j in f32mm.h's order, tiling
 * it as suits the level's registers. */
#ifndef PDQ_KERNELS_F32MM_INTERNAL_H
#define PDQ_KERNELS_F32MM_INTERNAL_H

#include <stddef.h>

typedef void (*f32mm_block_fn)(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy);

void f32mm_block_scalar(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy);
#if defined(__x86_64__) || defined(__i386__)
#define PDQ_F32MM_HAVE_X86 1
void f32mm_block_avx2(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy);
void f32mm_block_avx512(const float *x, int nx, const float *w, int nw, int in, float *y, size_t ldy);
#endif

#endif
