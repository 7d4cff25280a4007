/* The AVX2 integer kernels, written once and compiled twice by qint_avx2.c: with QI_VNNI 1 the
 * byte and word dot products are AVX-VNNI (vpdpbusd / vpdpwssd, VEX), with 0 they are vpmaddubsw
 * + vpmaddwd (no saturation here: |code * xh| pairs <= 3840 and |xl * code| pairs <= 7650, so the
 * int16 sums of two stay below 15300) and vpmaddwd + vpaddd. Both give the exact integers of
 * the rule, so both equal the scalar and AVX-512 kernels bit for bit. Not a header of its own:
 * included with QI_VNNI, QI_TARGET and QI_NAME(x) defined. */

/* The int32 lanes of a step's int16 sums h (of code * xh) and l (of xl * code): h * 256 + l. */
#if QI_VNNI
#define QI_WIDEN(h, l) _mm256_add_epi32(_mm256_slli_epi32(h, 8), l)
#else
#define QI_WIDEN(h, l) \
    _mm256_add_epi32(_mm256_madd_epi16(h, _mm256_set1_epi16(256)), _mm256_madd_epi16(l, _mm256_set1_epi16(1)))
#endif

/* One row's step: lane i of *va / *vb the exact sum of code * xq over columns 8i..8i+7 /
 * 64+8i..64+8i+7 of the step; with vb NULL (a step is one block) lane i of *va the sum over
 * both, the halves' sums added before widening (|h| <= 2 * 7680, |l| <= 2 * 15300: still int16),
 * so one widening instead of two. */
QI_TARGET static inline void QI_NAME(step_row)(const uint8_t *c, const int8_t *x4, __m256i *va, __m256i *vb) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i h = _mm256_setzero_si256(), l = h;
    for (int half = 0; half < 2; half++) {
        __m256i cb = _mm256_loadu_si256((const __m256i *)(c + 32 * half));
        __m256i lo = _mm256_and_si256(cb, m4), hi = _mm256_and_si256(_mm256_srli_epi16(cb, 4), m4);
        __m256i xhe = _mm256_loadu_si256((const __m256i *)(x4 + 32 * half));
        __m256i xho = _mm256_loadu_si256((const __m256i *)(x4 + 64 + 32 * half));
        __m256i xle = _mm256_loadu_si256((const __m256i *)(x4 + 128 + 32 * half));
        __m256i xlo = _mm256_loadu_si256((const __m256i *)(x4 + 192 + 32 * half));
        if (half == 1 && vb) {
            *va = QI_WIDEN(h, l);
            h = l = _mm256_setzero_si256();
        }
#if QI_VNNI
        h = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(h, lo, xhe), hi, xho);
        l = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(l, xle, lo), xlo, hi);
#else
        h = _mm256_add_epi16(h, _mm256_add_epi16(_mm256_maddubs_epi16(lo, xhe), _mm256_maddubs_epi16(hi, xho)));
        l = _mm256_add_epi16(l, _mm256_add_epi16(_mm256_maddubs_epi16(xle, lo), _mm256_maddubs_epi16(xlo, hi)));
#endif
    }
    *(vb ? vb : va) = QI_WIDEN(h, l);
}
#undef QI_WIDEN

/* step_row of the 4 rows' step at byte off (vb NULL: one block), prefetching p->pf ahead; the
 * rows' last bytes are copied, zero-padded: past them lie the next row or the buffer's end. */
__attribute__((always_inline)) QI_TARGET static inline void QI_NAME(step_rows4)(const qk_rows4 *p, size_t off,
                                                                              size_t rb, const int8_t *x4,
                                                                              __m256i *va, __m256i *vb) {
    if (off + 64 <= rb) {
        for (int k = 0; k < 4; k++) {
            const uint8_t *c = qk_rows4_at(p, k, off);
            _mm_prefetch((const char *)(c + p->pf), _MM_HINT_T1);
            QI_NAME(step_row)(c, x4, &va[k], vb ? &vb[k] : NULL);
        }
        return;
    }
    for (int k = 0; k < 4; k++) {
        uint8_t tail[64] = {0};
        memcpy(tail, qk_rows4_at(p, k, off), rb - off);
        QI_NAME(step_row)(tail, x4, &va[k], vb ? &vb[k] : NULL);
    }
}

/* Lane 4j + k (j < 2) of the result: row k's sum over the 4 lanes of quad j of v[k]. */
QI_TARGET static inline __m256i QI_NAME(reduce4)(const __m256i *v) {
    __m256i a = _mm256_add_epi32(_mm256_unpacklo_epi32(v[0], v[1]), _mm256_unpackhi_epi32(v[0], v[1]));
    __m256i b = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2], v[3]), _mm256_unpackhi_epi32(v[2], v[3]));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
}

QI_TARGET static inline void QI_NAME(epi4_block)(epi4 *e, const qk_rows4 *p, const qi_plan *pl, const float *xs,
                                                 const int32_t *sx, int b, __m128i s) {
    if (e->left == 0) { /* counted, not divided: see qint_avx512.c */
        int g = ++e->g;
        e->z = _mm_setr_epi32(p->zero[0][g], p->zero[1][g], p->zero[2][g], p->zero[3][g]);
        e->left = pl->nblocks - b < pl->bpg ? pl->nblocks - b : pl->bpg;
    }
    s = _mm_sub_epi32(s, _mm_mullo_epi32(e->z, _mm_set1_epi32(sx[b])));
    e->t = _mm_fmadd_ps(_mm_set1_ps(xs[b]), _mm_cvtepi32_ps(s), e->t);
    if (--e->left == 0) {
        int g = e->g;
        __m128 sc = _mm_setr_ps(p->scale[0][g], p->scale[1][g], p->scale[2][g], p->scale[3][g]);
        e->y = _mm_fmadd_ps(sc, e->t, e->y);
        e->t = _mm_setzero_ps();
    }
}

/* Rows [r0, r1) of the GEMV (y), or with y NULL of pdq_qexact_rows (s, per-channel: `one`):
 * each 4-row step sum exact in int32 (|S| <= 128 * 15 * 32768 < 2^26), added in int32 lanes for
 * at most 32 steps (< 2^31), then into int64. `one` (a constant where it is inlined): a step is
 * one block. rend >= r1: how far the task's prefetch may reach. */
__attribute__((always_inline)) QI_TARGET static inline void QI_NAME(gemv_rows)(const pdq_qmatrix *w, const qi_plan *pl,
                                                                             const uint8_t *xt, int r0, int r1,
                                                                             int rend, float *y, int64_t *sums,
                                                                             int one) {
    const int8_t *planes = qi_planes(pl, xt);
    const float *xs = qi_xs(pl, xt);
    const int32_t *sx = qi_sx(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes(rb);
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p);
        epi4 e = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_si128(), -1, 0};
        __m128i acc = _mm_setzero_si128();
        int64_t tot[4] = {0, 0, 0, 0};
        for (int s = 0; s < pl->nsteps; s++) {
            size_t off = (size_t)s * 64;
            const int8_t *x4 = planes + (size_t)s * 256;
            __m256i va[4], vb[4];
            QI_NAME(step_rows4)(&p, off, rb, x4, va, one ? NULL : vb);
            __m256i qa = QI_NAME(reduce4)(va); /* quads 0, 1 (of both halves when one) */
            __m128i q0 = _mm256_castsi256_si128(qa), q1 = _mm256_extracti128_si256(qa, 1);
            if (one && !y) {
                acc = _mm_add_epi32(acc, _mm_add_epi32(q0, q1));
                if ((s + 1) % 32 == 0 || s + 1 == pl->nsteps) {
                    int32_t a[4];
                    _mm_storeu_si128((__m128i *)a, acc);
                    for (int k = 0; k < 4; k++) tot[k] += a[k];
                    acc = _mm_setzero_si128();
                }
                continue;
            }
            if (one) {
                QI_NAME(epi4_block)(&e, &p, pl, xs, sx, s, _mm_add_epi32(q0, q1));
                continue;
            }
            __m256i qb = QI_NAME(reduce4)(vb); /* quads 2, 3 */
            __m128i q2 = _mm256_castsi256_si128(qb), q3 = _mm256_extracti128_si256(qb, 1);
            if (pl->B == 64) {
                int b0 = 2 * s;
                QI_NAME(epi4_block)(&e, &p, pl, xs, sx, b0, _mm_add_epi32(q0, q1));
                if (b0 + 1 < pl->nblocks) QI_NAME(epi4_block)(&e, &p, pl, xs, sx, b0 + 1, _mm_add_epi32(q2, q3));
            } else {
                int b0 = 4 * s;
                QI_NAME(epi4_block)(&e, &p, pl, xs, sx, b0, q0);
                if (b0 + 1 < pl->nblocks) QI_NAME(epi4_block)(&e, &p, pl, xs, sx, b0 + 1, q1);
                if (b0 + 2 < pl->nblocks) QI_NAME(epi4_block)(&e, &p, pl, xs, sx, b0 + 2, q2);
                if (b0 + 3 < pl->nblocks) QI_NAME(epi4_block)(&e, &p, pl, xs, sx, b0 + 3, q3);
            }
        }
        if (!y) {
            for (int k = 0; k < nr; k++) sums[r + k - r0] = tot[k];
            continue;
        }
        float out[4];
        _mm_storeu_ps(out, e.y);
        for (int k = 0; k < nr; k++) y[r + k] = out[k];
    }
}

QI_TARGET void QI_NAME(qi_gemv)(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1, int rend,
                                float *y) {
    if (pl->B == 128) QI_NAME(gemv_rows)(w, pl, xt, r0, r1, rend, y, NULL, 1);
    else QI_NAME(gemv_rows)(w, pl, xt, r0, r1, rend, y, NULL, 0);
}

/* pdq_qexact_rows (per-channel, so a step is one block). */
QI_TARGET void QI_NAME(qi_exact)(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int r0, int r1, int rend,
                                 int64_t *s) {
    QI_NAME(gemv_rows)(w, pl, xt, r0, r1, rend, NULL, s, 1);
}

/* pdq_qexact_groups (uint4, G a multiple of 32): each step's four 32-column quarters of the 4
 * rows (the halves of step_row, reduced per quad) go to their group's int32 lanes, flushed into
 * the int64 sums at a group's end or after 128 quarters (a quarter is at most 32 * 15 * 32768 <
 * 2^24, so 128 of them stay below 2^31). sums: [r1 - r0][ngroups]. */
__attribute__((always_inline)) QI_TARGET static inline void QI_NAME(groups_rows)(const pdq_qmatrix *w,
                                                                               const qi_plan *pl, const uint8_t *xt,
                                                                               int G, int r0, int r1, int rend,
                                                                               int64_t *sums, int whole) {
    const int8_t *planes = qi_planes(pl, xt);
    size_t rb = w->row_bytes, pf = qi_prefetch_bytes(rb);
    int ng = (w->cols + G - 1) / G;
    for (int r = r0; r < r1; r += 4) {
        qk_rows4 p;
        int nr = qi_rows4_begin(w, r, r1, rend, pf, &p);
        int64_t *o = sums + (size_t)(r - r0) * ng;
        for (int k = 0; k < nr; k++)
            for (int g = 0; g < ng; g++) o[(size_t)k * ng + g] = 0;
        __m128i acc = _mm_setzero_si128();
        int gcur = 0, nq = 0;
#define QI_FLUSH()                                                                   \
    do {                                                                             \
        int32_t a_[4];                                                               \
        _mm_storeu_si128((__m128i *)a_, acc);                                        \
        for (int k = 0; k < nr; k++) o[(size_t)k * ng + gcur] += a_[k];              \
        acc = _mm_setzero_si128();                                                   \
        nq = 0;                                                                      \
    } while (0)
        for (int s = 0; s < pl->nsteps; s++) {
            size_t off = (size_t)s * 64;
            const int8_t *x4 = planes + (size_t)s * 256;
            __m256i va[4], vb[4];
            QI_NAME(step_rows4)(&p, off, rb, x4, va, whole ? NULL : vb);
            __m256i qa = QI_NAME(reduce4)(va);
            if (whole) { /* the step's 4 quarters at once */
                int g = 128 * s / G;
                if (g != gcur || nq + 4 > 128) QI_FLUSH();
                gcur = g;
                acc = _mm_add_epi32(acc, _mm_add_epi32(_mm256_castsi256_si128(qa), _mm256_extracti128_si256(qa, 1)));
                nq += 4;
                continue;
            }
            __m256i qb = QI_NAME(reduce4)(vb);
            __m128i q[4] = {_mm256_castsi256_si128(qa), _mm256_extracti128_si256(qa, 1), _mm256_castsi256_si128(qb),
                            _mm256_extracti128_si256(qb, 1)};
            for (int j = 0; j < 4 && 128 * s + 32 * j < w->cols; j++) {
                int g = (128 * s + 32 * j) / G;
                if (g != gcur || nq == 128) QI_FLUSH();
                gcur = g;
                acc = _mm_add_epi32(acc, q[j]);
                nq++;
            }
        }
        QI_FLUSH();
#undef QI_FLUSH
    }
}

QI_TARGET void QI_NAME(qi_exact_groups)(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *xt, int G, int r0,
                                        int r1, int rend, int64_t *sums) {
    /* whole: a step lies in one group, its halves summed before widening, one reduction */
    if (G % 128 == 0) QI_NAME(groups_rows)(w, pl, xt, G, r0, r1, rend, sums, 1);
    else QI_NAME(groups_rows)(w, pl, xt, G, r0, r1, rend, sums, 0);
}

/* Up to 4 rows of x against up to QI_TILE_P panels, one panel at a time: 8 accumulators (4 x
 * rows times the two 8-row halves of the panel). */
QI_TARGET void QI_NAME(qi_tile)(const pdq_qmatrix *w, const qi_plan *pl, const uint8_t *const *xr, int ni,
                                const int32_t *const *panels, const float *const *pscales, int np, int nrows,
                                float *y, size_t ystride) {
    (void)w;
    const int32_t *x0, *x1, *x2, *x3;
    const float *xs[4];
    {
        const uint8_t *x[4];
        for (int i = 0; i < 4; i++) {
            x[i] = xr[i < ni ? i : ni - 1];
            xs[i] = qi_xs(pl, x[i]);
        }
        x0 = (const int32_t *)qi_xq(pl, x[0]);
        x1 = (const int32_t *)qi_xq(pl, x[1]);
        x2 = (const int32_t *)qi_xq(pl, x[2]);
        x3 = (const int32_t *)qi_xq(pl, x[3]);
    }
    int half = pl->B / 2;
    for (int k = 0; k < np; k++) {
        const int32_t *pk = panels[k];
        const float *sc = pscales[k];
        __m256 t[4][2], yv[4][2];
        for (int i = 0; i < 4; i++) t[i][0] = t[i][1] = yv[i][0] = yv[i][1] = _mm256_setzero_ps();
        for (int b = 0; b < pl->nblocks; b++) {
            __m256i a0 = _mm256_setzero_si256(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
            for (int j = b * half; j < (b + 1) * half; j++) {
                __m256i wl = _mm256_load_si256((const __m256i *)(pk + (size_t)j * QI_PANEL));
                __m256i wh = _mm256_load_si256((const __m256i *)(pk + (size_t)j * QI_PANEL + 8)), xb;
#if QI_VNNI
#define QI_X(i)                                        \
    xb = _mm256_set1_epi32(x##i[j]);                   \
    a##i = dpwssd_vex(a##i, wl, xb);                   \
    b##i = dpwssd_vex(b##i, wh, xb);
#else
#define QI_X(i)                                                    \
    xb = _mm256_set1_epi32(x##i[j]);                               \
    madd2_acc(&a##i, &b##i, wl, wh, xb);
#endif
                QI_X(0) QI_X(1) QI_X(2) QI_X(3)
#undef QI_X
            }
#define QI_T(i)                                                                  \
    do {                                                                         \
        __m256 xsb = _mm256_set1_ps(xs[i][b]);                                   \
        t[i][0] = _mm256_fmadd_ps(xsb, _mm256_cvtepi32_ps(a##i), t[i][0]);       \
        t[i][1] = _mm256_fmadd_ps(xsb, _mm256_cvtepi32_ps(b##i), t[i][1]);       \
    } while (0)
            QI_T(0);
            QI_T(1);
            QI_T(2);
            QI_T(3);
#undef QI_T
            if (qi_last_in_group(pl, b)) {
                int g = b / pl->bpg;
                __m256 cl = _mm256_load_ps(sc + (size_t)g * QI_PANEL), ch = _mm256_load_ps(sc + (size_t)g * QI_PANEL + 8);
                for (int i = 0; i < 4; i++) {
                    yv[i][0] = _mm256_fmadd_ps(cl, t[i][0], yv[i][0]);
                    yv[i][1] = _mm256_fmadd_ps(ch, t[i][1], yv[i][1]);
                    t[i][0] = t[i][1] = _mm256_setzero_ps();
                }
            }
        }
        int left = nrows - k * QI_PANEL, nk = left < QI_PANEL ? left : QI_PANEL;
        for (int i = 0; i < ni; i++) {
            float out[16];
            _mm256_storeu_ps(out, yv[i][0]);
            _mm256_storeu_ps(out + 8, yv[i][1]);
            memcpy(y + (size_t)i * ystride + (size_t)k * QI_PANEL, out, sizeof(float) * (size_t)nk);
        }
    }
}
