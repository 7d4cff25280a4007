#include "kernels/qint_internal.h"
/* TEMP stubs */
void qi_gemv_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, float *y) { qi_gemv_scalar(w, p, xt, r0, r1, y); }
void qi_gemv_avx2_vnni(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *xt, int r0, int r1, float *y) { qi_gemv_scalar(w, p, xt, r0, r1, y); }
void qi_tile_avx2(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *const *xr, int ni, const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y, size_t ystride) {(void)w;(void)p;(void)xr;(void)ni;(void)panels;(void)pscales;(void)np;(void)nrows;(void)y;(void)ystride;}
void qi_tile_avx2_vnni(const pdq_qmatrix *w, const qi_plan *p, const uint8_t *const *xr, int ni, const int32_t *const *panels, const float *const *pscales, int np, int nrows, float *y, size_t ystride) {(void)w;(void)p;(void)xr;(void)ni;(void)panels;(void)pscales;(void)np;(void)nrows;(void)y;(void)ystride;}
