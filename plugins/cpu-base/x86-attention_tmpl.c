/* SPDX-License-Identifier: MIT */
/* x86-attention_tmpl.c - attention of the avx2 and avx512 backends, included by
 * x86-infer_tmpl.c (the same VF / vf_* operations; see there).
 *
 * out = softmax(scale Q K^T + causal mask) V, grouped-query.  A work item is
 * up to ATT_ROWS query rows (all heads) and a segment of the keys: the rows
 * of a prefill share each tile of keys (widened once for all of them), each
 * row only over the keys it sees.  Keys go by tiles of
 * ATT_TILE positions; a tile of K and of V is read token by token, all KV
 * heads of a token together, in the cache's own order: the rows of one head
 * alone are hundreds of bytes apart, a stride that measured 2 GB/s on a Zen 4
 * against 18 GB/s for the same bytes read in order.  Rows are copied (f32)
 * or widened (f16) into the worker's scratch, padded with zeros to whole
 * vectors, so the inner loops have no tails; each row is widened once for
 * all query heads of its KV head.  Per tile and query head:
 *   scores   4 keys at a time, float FMAs along the head dimension;
 *   softmax  online: the running maximum M, p = exp(s - M) in float; when a
 *            tile raises M, what was accumulated is scaled by exp(old - M)
 *            (in double), so nothing overflows and no score outlives its
 *            tile (no score matrix, whatever the cache length);
 *   p V      up to PV_HEADS heads of one KV head x 2 vectors of the head
 *            dimension in registers, float FMAs over the tile's keys;
 * and the tile's float sums are added into double accumulators: float error
 * stays that of ATT_TILE terms (~2e-6 of sum p |v| at worst), however long
 * the cache.
 *
 * One query row (decode) with at least 4 query heads per KV head takes
 * another way, with the heads in the lanes: see "one query row" below.
 *
 * Large scores: an error e in a score is a relative error e in its weight,
 * so scores must be right to ~1e-6 absolute, which float sums of scores
 * near 1e3 are not.  A tile whose float scores pass CPU_ATTN_EXACT_ABOVE in
 * magnitude has them computed again in double (att_exact_scores) and kept
 * as float differences from the tile's largest, that largest in double; the
 * heads-in-lanes way (its query pre-scaled in float) gives the whole call
 * to the other way when it meets such a tile.
 *
 * Threads: blocks of query rows are items (at least two per thread); when
 * there are fewer rows than threads (decode), items are single rows x key
 * segments, each keeps its (max, sum, acc) per head, and the calling thread
 * merges the segments.
 */

#define ATT_TILE 32       /* keys per tile: float sums of at most this many terms */
#define ATT_MIN_SEGMENT 256 /* keys per segment at least, when keys are split */
#define ATT_MAX_SEGMENTS 64
#define ATT_ROWS 4        /* query rows of one item (prefill): they share each tile */
#define ATTL_TILE 48      /* keys per tile, heads in lanes: a multiple of ATT_SCORE_KEYS */
#define ATTL_DIMS 16      /* dimensions of a chunk of the widened keys (2 x 8) */
#define ATTL_LANES 8      /* heads in lanes: 256-bit vectors in both plugins (see there) */

typedef struct att_job {
    const rayo_call *call;
    const rayo_attention_params *p;
    int f16;
    cpu_attention_layout s;
    size_t group;           /* query heads per KV head */
    size_t dp;              /* head_dim padded to 2 vectors */
    size_t rows;            /* query rows per item (1 where keys are cut in segments) */
    size_t segments, segment_keys; /* key segments per query row, and their length */
    size_t items, per_task;
    float *scratch;         /* per worker */
    size_t per_worker;      /* floats */
    double *partial;        /* segments > 1: per item, per head (max, sum, acc[dp]) */
    size_t pair, nv, packs, dk, dv, dw; /* heads in lanes (attl_plan): see there */
    int *large;             /* set (atomically) where heads in lanes meet a score past CPU_ATTN_EXACT_ABOVE */
} att_job;

typedef struct att_work {
    float *q, *kt, *vt;     /* query rows; a tile of keys and of values (all KV heads) */
    float *pr, *tacc;       /* scores then p (ATT_TILE per head); the tile's p V (dp per head) */
    double *acc, *mx, *sum; /* per head: sum of p v (dp), running max, sum of p */
    /* "head" v of these arrays is head v % n_heads of the item's query row v / n_heads */
} att_work;

static size_t att_round(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* Floats of one worker's scratch (64-byte aligned parts). */
static size_t att_floats_per_worker(const rayo_attention_params *p, size_t rows, size_t dp)
{
    size_t heads = att_round(rows * p->n_heads, 8);
    size_t doubles = heads * dp + 2 * heads;
    size_t floats = heads * dp + 2 * p->n_kv_heads * ATT_TILE * dp + heads * ATT_TILE + heads * dp;
    return att_round(2 * doubles + floats, 16);
}

static att_work att_work_of(const att_job *job, unsigned worker)
{
    size_t dp = job->dp, heads = att_round(job->rows * job->p->n_heads, 8);
    float *f = job->scratch + (size_t)worker * job->per_worker;
    att_work w;
    w.acc = (double *)(void *)f; /* doubles first: 64-byte aligned */
    w.mx = w.acc + heads * dp;
    w.sum = w.mx + heads;
    f += 2 * (heads * dp + 2 * heads);
    w.q = f, f += heads * dp;
    w.kt = f, f += job->p->n_kv_heads * ATT_TILE * dp;
    w.vt = f, f += job->p->n_kv_heads * ATT_TILE * dp;
    w.tacc = f, f += heads * dp;
    w.pr = f;
    return w;
}

/* d f16 values at element `at` of base as f32, exact for all but
 * signalling NaNs (quieted: a NaN in the cache gives NaN either way). */
static inline void f16_row_widen(const void *base, size_t at, float *row, size_t d)
{
    const uint16_t *h = (const uint16_t *)base + at;
    size_t l = 0;
    for (; l + 8 <= d; l += 8)
        _mm256_storeu_ps(row + l, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + l))));
    for (; l < d; l++)
        row[l] = rayo_f16_to_f32(h[l]);
}

/* Rows [j0, j0 + count) of every KV head, as f32 rows of dp (zero-padded):
 * head g's rows at dst + g * ATT_TILE * dp; rows up to a multiple of 4 are
 * zeros. */
static void att_load_tile(const att_job *job, const void *base, size_t token_stride, size_t head_stride,
                          size_t j0, size_t count, float *dst)
{
    size_t d = job->p->head_dim, dp = job->dp, heads = job->p->n_kv_heads;
    for (size_t r = 0; r < count; r++)
        for (size_t g = 0; g < heads; g++) {
            size_t at = (j0 + r) * token_stride + g * head_stride;
            float *row = dst + (g * ATT_TILE + r) * dp;
            if (job->f16)
                f16_row_widen(base, at, row, d);
            else
                memcpy(row, (const float *)base + at, d * sizeof(float));
            if (dp > d)
                memset(row + d, 0, (dp - d) * sizeof(float));
        }
    if (count % 4)
        for (size_t g = 0; g < heads; g++)
            memset(dst + (g * ATT_TILE + count) * dp, 0, (4 - count % 4) * dp * sizeof(float));
}

/* s[h][j] = scale q_h . k_j for NH heads (query rows dp apart, scores
 * ATT_TILE apart) and keys [0, count rounded up to 4): NH x 4 accumulators
 * in registers, each key vector loaded once for the NH heads. */
static inline __attribute__((always_inline)) void att_scores(const float *q, const float *kt, size_t dp,
                                                             size_t count, float scale, float *s, const int NH)
{
    for (size_t j = 0; j < count; j += 4) {
        const float *k = kt + j * dp;
        VF a[SCORE_HEADS][4];
#pragma GCC unroll 8
        for (int h = 0; h < NH; h++)
            a[h][0] = a[h][1] = a[h][2] = a[h][3] = vf_zero();
        for (size_t l = 0; l < dp; l += VF_LANES) {
            VF k0 = vf_load(k + l), k1 = vf_load(k + dp + l), k2 = vf_load(k + 2 * dp + l), k3 = vf_load(k + 3 * dp + l);
#pragma GCC unroll 8
            for (int h = 0; h < NH; h++) {
                VF qv = vf_load(q + h * dp + l);
                a[h][0] = vf_fma(qv, k0, a[h][0]);
                a[h][1] = vf_fma(qv, k1, a[h][1]);
                a[h][2] = vf_fma(qv, k2, a[h][2]);
                a[h][3] = vf_fma(qv, k3, a[h][3]);
            }
        }
#pragma GCC unroll 8
        for (int h = 0; h < NH; h++)
            _mm_storeu_ps(s + h * ATT_TILE + j, _mm_mul_ps(vf_sum4(a[h][0], a[h][1], a[h][2], a[h][3]), _mm_set1_ps(scale)));
    }
}

static void att_scores_many(const float *q, const float *kt, size_t dp, size_t count, float scale, float *s)
{
    att_scores(q, kt, dp, count, scale, s, SCORE_HEADS);
}

static void att_scores_one(const float *q, const float *kt, size_t dp, size_t count, float scale, float *s)
{
    att_scores(q, kt, dp, count, scale, s, 1);
}

/* Turns the scores of head h, s = off + the tile's floats, into
 * p = exp(s - M) (zeros past count) with the new running max M; returns the
 * factor for what was summed before. */
static double att_softmax_tile(att_work *w, size_t h, size_t count, double off)
{
    float *s = w->pr + h * ATT_TILE;
    size_t whole = count / VF_LANES * VF_LANES, padded = att_round(count, VF_LANES);
    float m = -INFINITY;
    if (whole) {
        VF vm = vf_load(s);
        for (size_t j = VF_LANES; j < whole; j += VF_LANES)
            vm = vf_max(vm, vf_load(s + j));
        m = vf_hmax(vm);
    }
    for (size_t j = whole; j < count; j++)
        m = s[j] > m ? s[j] : m;
    double alpha = 1.0;
    if (off + m > w->mx[h]) {
        alpha = exp(w->mx[h] - (off + m)); /* 0 for the first tile */
        w->mx[h] = off + m;
    }
    /* exp(-87) ~ 1e-38 stands for smaller weights: far below the contract,
     * and it keeps exp on its fast path. */
    VF vm = vf_set((float)(w->mx[h] - off)), floor = vf_set(-87.0f), total = vf_zero();
    for (size_t j = count; j < padded; j++)
        s[j] = 0.0f; /* scores past the keys' multiple of 4 were never written: no exp of garbage */
    for (size_t j = 0; j < padded; j += VF_LANES)
        vf_store(s + j, vf_exp(vf_max(floor, vf_sub(vf_load(s + j), vm))));
    for (size_t j = count; j < padded; j++)
        s[j] = 0.0f;
    for (size_t j = 0; j < padded; j += VF_LANES)
        total = vf_add(total, vf_load(s + j));
    w->sum[h] = w->sum[h] * alpha + (double)vf_hsum(total);
    return alpha;
}

/* tacc[h] = sum_j p[h][j] v_j for NH heads, two vectors of dimensions at a
 * time (NH x 2 accumulators stay in registers). */
static inline __attribute__((always_inline)) void att_pv(const float *pr, const float *vt, size_t dp,
                                                         size_t count, float *tacc, const int NH)
{
    for (size_t c = 0; c < dp; c += 2 * VF_LANES) {
        VF a[PV_HEADS][2];
#pragma GCC unroll 8
        for (int h = 0; h < NH; h++)
            a[h][0] = a[h][1] = vf_zero();
        for (size_t j = 0; j < count; j++) {
            VF v0 = vf_load(vt + j * dp + c), v1 = vf_load(vt + j * dp + c + VF_LANES);
#pragma GCC unroll 8
            for (int h = 0; h < NH; h++) {
                VF pj = vf_set(pr[h * ATT_TILE + j]);
                a[h][0] = vf_fma(pj, v0, a[h][0]);
                a[h][1] = vf_fma(pj, v1, a[h][1]);
            }
        }
#pragma GCC unroll 8
        for (int h = 0; h < NH; h++) {
            vf_store(tacc + h * dp + c, a[h][0]);
            vf_store(tacc + h * dp + c + VF_LANES, a[h][1]);
        }
    }
}

static void att_pv_many(const float *pr, const float *vt, size_t dp, size_t count, float *tacc)
{
    att_pv(pr, vt, dp, count, tacc, PV_HEADS);
}

static void att_pv_one(const float *pr, const float *vt, size_t dp, size_t count, float *tacc)
{
    att_pv(pr, vt, dp, count, tacc, 1);
}

/* acc = acc alpha + tacc, in double. */
static void att_merge(double *acc, const float *tacc, double alpha, size_t dp)
{
    __m256d a = _mm256_set1_pd(alpha);
    for (size_t l = 0; l < dp; l += 4)
        _mm256_storeu_pd(acc + l, _mm256_fmadd_pd(_mm256_loadu_pd(acc + l), a, _mm256_cvtps_pd(_mm_loadu_ps(tacc + l))));
}

/* The float scores s of a head (count keys) again in double where they are
 * large (cpu-f64-fallback.h): returns off, s then relative to it (0: s
 * stays). */
static double att_exact_scores(const float *q, const float *kt, size_t dp, size_t count, float scale, float *s)
{
    if (!cpu_scores_large(s, count))
        return 0.0;
    double exact[ATT_TILE];
    for (size_t j = 0; j < count; j++) {
        __m256d a = _mm256_setzero_pd();
        for (size_t l = 0; l < dp; l += 4)
            a = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(q + l)), _mm256_cvtps_pd(_mm_loadu_ps(kt + j * dp + l)), a);
        double t[4];
        _mm256_storeu_pd(t, a);
        exact[j] = ((t[0] + t[1]) + (t[2] + t[3])) * (double)scale;
    }
    return cpu_scores_relative(exact, count, s);
}

/* The query heads [h0, h0 + group) of w (those of KV head g) over the
 * tile's first count keys. */
static void att_kv_head(const att_job *job, att_work *w, size_t h0, size_t g, size_t count)
{
    size_t dp = job->dp, h1 = h0 + job->group;
    const float *kt = w->kt + g * ATT_TILE * dp, *vt = w->vt + g * ATT_TILE * dp;
    double alpha[PV_HEADS];
    for (size_t h = h0; h < h1; h += PV_HEADS) {
        size_t nh = h1 - h < PV_HEADS ? h1 - h : PV_HEADS;
        size_t l = 0;
        for (; l + SCORE_HEADS <= nh; l += SCORE_HEADS)
            att_scores_many(w->q + (h + l) * dp, kt, dp, count, job->p->scale, w->pr + (h + l) * ATT_TILE);
        for (; l < nh; l++)
            att_scores_one(w->q + (h + l) * dp, kt, dp, count, job->p->scale, w->pr + (h + l) * ATT_TILE);
        for (l = 0; l < nh; l++) {
            float *sl = w->pr + (h + l) * ATT_TILE;
            double off = att_exact_scores(w->q + (h + l) * dp, kt, dp, count, job->p->scale, sl);
            alpha[l] = att_softmax_tile(w, h + l, count, off);
        }
        if (nh == PV_HEADS)
            att_pv_many(w->pr + h * ATT_TILE, vt, dp, count, w->tacc + h * dp);
        else
            for (l = 0; l < nh; l++)
                att_pv_one(w->pr + (h + l) * ATT_TILE, vt, dp, count, w->tacc + (h + l) * dp);
        for (l = 0; l < nh; l++)
            att_merge(w->acc + (h + l) * dp, w->tacc + (h + l) * dp, alpha[l], dp);
    }
}

/* The keys query row i sees. */
static size_t att_visible(const rayo_attention_params *p, size_t i)
{
    return (p->flags & RAYO_ATTN_CAUSAL) ? p->n_kv - p->n_q + i + 1 : p->n_kv;
}

/* Query rows [i0, i0 + rows) over keys [k0, k1), each row up to the keys it
 * sees: the running (max, sum, acc) of every head of every row in w. */
static void att_keys(const att_job *job, att_work *w, size_t i0, size_t rows, size_t k0, size_t k1)
{
    const rayo_attention_params *p = job->p;
    const rayo_call *c = job->call;
    size_t d = p->head_dim, dp = job->dp, last = att_visible(p, i0 + rows - 1);
    for (size_t v = 0; v < rows * p->n_heads; v++) {
        size_t i = i0 + v / p->n_heads, h = v % p->n_heads;
        memcpy(w->q + v * dp, (const float *)c->a + i * job->s.q_token + h * job->s.q_head, d * sizeof(float));
        memset(w->q + v * dp + d, 0, (dp - d) * sizeof(float));
        memset(w->acc + v * dp, 0, dp * sizeof(double));
        w->mx[v] = -INFINITY;
        w->sum[v] = 0.0;
    }
    k1 = k1 < last ? k1 : last; /* the last row sees the most */
    for (size_t j0 = k0; j0 < k1; j0 += ATT_TILE) {
        size_t count = k1 - j0 < ATT_TILE ? k1 - j0 : ATT_TILE;
        att_load_tile(job, c->b, job->s.k_token, job->s.k_head, j0, count, w->kt);
        att_load_tile(job, c->c, job->s.v_token, job->s.v_head, j0, count, w->vt);
        for (size_t b = 0; b < rows; b++) {
            size_t seen = att_visible(p, i0 + b);
            if (seen <= j0)
                continue;
            for (size_t g = 0; g < p->n_kv_heads; g++)
                att_kv_head(job, w, b * p->n_heads + g * job->group, g, seen - j0 < count ? seen - j0 : count);
        }
    }
}

static void att_item(const att_job *job, att_work *w, size_t item)
{
    const rayo_attention_params *p = job->p;
    size_t seg = item % job->segments, i0 = item / job->segments * job->rows, d = p->head_dim, dp = job->dp;
    size_t rows = p->n_q - i0 < job->rows ? p->n_q - i0 : job->rows;
    size_t k0 = seg * job->segment_keys, k1 = k0 + job->segment_keys;
    att_keys(job, w, i0, rows, k0, k1 < p->n_kv ? k1 : p->n_kv);
    if (job->segments > 1) { /* one row; kept for the merge */
        double *part = job->partial + item * p->n_heads * (dp + 2);
        for (size_t h = 0; h < p->n_heads; h++, part += dp + 2) {
            part[0] = w->mx[h], part[1] = w->sum[h];
            memcpy(part + 2, w->acc + h * dp, d * sizeof(double));
        }
        return;
    }
    for (size_t v = 0; v < rows * p->n_heads; v++) {
        size_t i = i0 + v / p->n_heads, h = v % p->n_heads;
        float *out = (float *)job->call->y + i * job->s.o_token + h * job->s.o_head;
        double inv = 1.0 / w->sum[v];
        for (size_t l = 0; l < d; l++)
            out[l] = (float)(w->acc[v * dp + l] * inv);
    }
}

/* out = the segments' sums, each scaled from its max to the largest. */
static void att_merge_segments(const att_job *job)
{
    const rayo_attention_params *p = job->p;
    size_t d = p->head_dim, dp = job->dp, stride = p->n_heads * (dp + 2);
    double factor[ATT_MAX_SEGMENTS];
    for (size_t i = 0; i < p->n_q; i++)
        for (size_t h = 0; h < p->n_heads; h++) {
            const double *first = job->partial + i * job->segments * stride + h * (dp + 2);
            double m = -INFINITY, sum = 0.0;
            for (size_t s = 0; s < job->segments; s++)
                m = first[s * stride] > m ? first[s * stride] : m;
            for (size_t s = 0; s < job->segments; s++) { /* an empty segment: sum 0, max -inf */
                factor[s] = first[s * stride + 1] > 0.0 ? exp(first[s * stride] - m) : 0.0;
                sum += first[s * stride + 1] * factor[s];
            }
            float *out = (float *)job->call->y + i * job->s.o_token + h * job->s.o_head;
            for (size_t l = 0; l < d; l++) {
                double acc = 0.0;
                for (size_t s = 0; s < job->segments; s++)
                    acc += first[s * stride + 2 + l] * factor[s];
                out[l] = (float)(acc / sum);
            }
        }
}

/* ---- one query row, heads in lanes (decode) -----------------------------------
 * For one query row the scores of a key are a dot product per query head,
 * and the query heads of one KV head all read the same key: put those heads
 * in the lanes of a vector, and every step is one FMA of that vector (query
 * dimension l of every head, or p of every head) by one broadcast cache
 * value.  No horizontal sums, the softmax is lane-wise, and the cache is
 * widened once.  A
 * vector holds the query heads of `pair` KV heads (2 where a KV head has at
 * most 4 query heads): lane i is KV head i % pair of the pack, so the
 * widened tile interleaves those KV heads' values and one 8-byte broadcast
 * gives each lane its own; more than 8 query heads take several vectors.
 * Lanes without a query head compute on zeros and are not written.
 * The vectors are 256-bit in both plugins: on a Zen 4, an FMA with a 32-bit
 * broadcast operand runs at the FMA peak at 256 bits, while 512-bit FMAs fed
 * by 64-bit broadcasts ran at 73% of theirs; the avx512 plugin still gets
 * 32 registers (more accumulators) and embedded broadcasts.  Per tile of
 * ATTL_TILE keys and pack of KV heads:
 *   scores  ATT_SCORE_KEYS keys x 1 vector of heads in registers, FMAs
 *           along the head dimension (the query pre-scaled), the keys'
 *           values broadcast from the widened tile;
 *   softmax online per lane, as above (float tile, double sums);
 *   p V     ATT_PV_DIMS dimensions x 1 vector of heads in registers over
 *           the tile's keys, each value broadcast, then added into double
 *           accumulators (float sums of ATTL_TILE terms). */

typedef struct attl_work {
    float *qt, *kv, *sc, *mx; /* scaled query [pack][l][vector]; a widened tile; scores then p [pack][key][vector]; running max */
    double *acc, *sum, *alpha; /* [pack][dim][vector]; [pack][vector]; the tile's rescaling [pack][vector] */
} attl_work;

static float *attl_carve(float **f, size_t count)
{
    float *part = *f;
    *f += att_round(count, 16); /* keeps every part 64-byte aligned */
    return part;
}

static size_t attl_vectors(const att_job *job)
{
    return job->packs * job->nv * ATTL_LANES;
}

static size_t attl_floats_per_worker(const att_job *job)
{
    size_t lanes = attl_vectors(job);
    return 2 * (att_round(lanes * job->dv, 16) + 2 * att_round(lanes, 16)) + att_round(lanes * job->dk, 16) +
           att_round(ATTL_TILE * job->dw * job->pair * job->packs, 16) + att_round(ATTL_TILE * lanes, 16) +
           att_round(lanes, 16);
}

static attl_work attl_work_of(const att_job *job, unsigned worker)
{
    size_t lanes = attl_vectors(job);
    float *f = job->scratch + (size_t)worker * job->per_worker;
    attl_work w;
    w.acc = (double *)(void *)attl_carve(&f, 2 * lanes * job->dv);
    w.sum = (double *)(void *)attl_carve(&f, 2 * lanes);
    w.alpha = (double *)(void *)attl_carve(&f, 2 * lanes);
    w.qt = attl_carve(&f, lanes * job->dk);
    w.kv = attl_carve(&f, ATTL_TILE * job->dw * job->pair * job->packs);
    w.sc = attl_carve(&f, ATTL_TILE * lanes);
    w.mx = attl_carve(&f, lanes);
    return w;
}

/* The query head of lane i of vector v of pack k, or -1 for none. */
static long attl_head(const att_job *job, size_t k, size_t v, size_t i)
{
    size_t g = k * job->pair + i % job->pair, slot = (v * ATTL_LANES + i) / job->pair;
    return g < job->p->n_kv_heads && slot < job->group ? (long)(g * job->group + slot) : -1;
}

/* Where a widened tile puts value l of row r of pack k: k * pack + r * row
 * + (l / ATTL_DIMS) * chunk + (l % ATTL_DIMS) * pair, the pair's values side
 * by side. */
typedef struct attl_layout {
    size_t row, chunk, width, pack; /* width: values per row, zeros past head_dim; packs `pack` floats apart */
} attl_layout;

static float attl_value(const att_job *job, const void *base, size_t at)
{
    return job->f16 ? rayo_f16_to_f32(((const uint16_t *)base)[at]) : ((const float *)base)[at];
}

/* 8 values of a KV head (S 1), or of two interleaved (S 2), widened to f32 at `to`. */
static inline __attribute__((always_inline)) void attl_widen8(const void *base, size_t at0, size_t at1, float *to,
                                                              const int F16, const int S)
{
    if (F16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)base + at0));
        if (S == 1) {
            _mm256_storeu_ps(to, _mm256_cvtph_ps(a));
            return;
        }
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)base + at1));
        _mm256_storeu_ps(to, _mm256_cvtph_ps(_mm_unpacklo_epi16(a, b)));
        _mm256_storeu_ps(to + 8, _mm256_cvtph_ps(_mm_unpackhi_epi16(a, b)));
    } else if (S == 1)
        _mm256_storeu_ps(to, _mm256_loadu_ps((const float *)base + at0));
    else
        for (size_t half = 0; half < 8; half += 4) {
            __m128 a = _mm_loadu_ps((const float *)base + at0 + half), b = _mm_loadu_ps((const float *)base + at1 + half);
            _mm_storeu_ps(to + 2 * half, _mm_unpacklo_ps(a, b));
            _mm_storeu_ps(to + 2 * half + 4, _mm_unpackhi_ps(a, b));
        }
}

/* Rows [j0, j0 + count) of every KV head, token by token in the cache's
 * order, into the packs: the whole groups of 8 values of each row
 * (attl_load_rest does the rest).  A pair past the last KV head repeats
 * it: those lanes have no query head. */
static inline __attribute__((always_inline)) void attl_load_rows(const att_job *job, const attl_layout *lay,
                                                                 const void *base, size_t token_stride,
                                                                 size_t head_stride, size_t j0, size_t count,
                                                                 float *dst, const int F16, const int S)
{
    size_t whole = job->p->head_dim / 8 * 8, last = job->p->n_kv_heads - 1, row = lay->row, chunk = lay->chunk;
    for (size_t r = 0; r < count; r++)
        for (size_t k = 0; k < job->packs; k++) {
            size_t g = k * S, g1 = S == 2 && g < last ? g + 1 : g;
            size_t at0 = (j0 + r) * token_stride + g * head_stride, at1 = (j0 + r) * token_stride + g1 * head_stride;
            float *out = dst + k * lay->pack + r * row;
            size_t c = 0;
            for (; c + ATTL_DIMS <= whole; c += ATTL_DIMS, out += chunk) {
                attl_widen8(base, at0 + c, at1 + c, out, F16, S);
                attl_widen8(base, at0 + c + 8, at1 + c + 8, out + 8 * S, F16, S);
            }
            if (c < whole) /* 8 more */
                attl_widen8(base, at0 + c, at1 + c, out, F16, S);
        }
}

/* attl_load_rows compiled for the cache's dtype and the pack's width. */
static void attl_load_whole(const att_job *job, const attl_layout *lay, const void *base, size_t ts, size_t hs,
                            size_t j0, size_t count, float *dst)
{
    if (job->f16 && job->pair == 2)
        attl_load_rows(job, lay, base, ts, hs, j0, count, dst, 1, 2);
    else if (job->f16)
        attl_load_rows(job, lay, base, ts, hs, j0, count, dst, 1, 1);
    else if (job->pair == 2)
        attl_load_rows(job, lay, base, ts, hs, j0, count, dst, 0, 2);
    else
        attl_load_rows(job, lay, base, ts, hs, j0, count, dst, 0, 1);
}

/* What attl_load_rows leaves: values past the last group of 8 one by one,
 * zeros up to the width, and zero rows from count up to `rows`. */
static void attl_load_rest(const att_job *job, const attl_layout *lay, const void *base, size_t token_stride,
                           size_t head_stride, size_t j0, size_t count, size_t rows, float *dst)
{
    size_t d = job->p->head_dim, S = job->pair, last = job->p->n_kv_heads - 1;
    for (size_t k = 0; k < job->packs; k++)
        for (size_t r = 0; r < rows; r++)
            for (size_t l = r < count ? d / 8 * 8 : 0; l < lay->width; l++)
                for (size_t i = 0; i < S; i++) {
                    size_t g = k * S + i < last ? k * S + i : last, at = (j0 + r) * token_stride + g * head_stride;
                    float *to = dst + k * lay->pack + r * lay->row + l / ATTL_DIMS * lay->chunk + l % ATTL_DIMS * S;
                    to[i] = r < count && l < d ? attl_value(job, base, at + l) : 0.0f;
                }
}

/* Rows [j0, j0 + count) of every KV head as f32 into the packs (layout
 * lay), zero rows from count up to `rows`. */
static void attl_load_tile(const att_job *job, const attl_layout *lay, const void *base, size_t token_stride,
                           size_t head_stride, size_t j0, size_t count, size_t rows, float *dst)
{
    attl_load_whole(job, lay, base, token_stride, head_stride, j0, count, dst);
    if (job->p->head_dim % 8 || lay->width > job->p->head_dim || rows > count)
        attl_load_rest(job, lay, base, token_stride, head_stride, j0, count, rows, dst);
}

/* The value at p in every lane (S 1), or p[0] in the even lanes and p[1] in
 * the odd ones (S 2: one 8-byte broadcast). */
static inline __m256 attl_broadcast(const float *p, const int S)
{
    if (S == 1)
        return _mm256_broadcast_ss(p);
    double pair;
    memcpy(&pair, p, sizeof pair);
    return _mm256_castpd_ps(_mm256_set1_pd(pair));
}

/* sc[j][v] = qt . k_j for keys [0, rows), rows a multiple of
 * ATT_SCORE_KEYS: that many accumulators, each key value broadcast to its
 * lanes.  The tile holds the keys' values by chunks of ATTL_DIMS dimensions
 * (all keys' chunk 0, then chunk 1, ...), so that the keys of a block are a
 * fixed distance apart: the addresses take no registers. */
static inline __attribute__((always_inline)) void attl_scores(const float *qt, const float *ks, size_t dk,
                                                              size_t rows, size_t nv, size_t v, float *sc,
                                                              const int S)
{
    for (size_t j = 0; j < rows; j += ATT_SCORE_KEYS) {
        __m256 a[ATT_SCORE_KEYS];
#pragma GCC unroll 32
        for (int m = 0; m < ATT_SCORE_KEYS; m++)
            a[m] = _mm256_setzero_ps();
        for (size_t c = 0; c < dk; c += ATTL_DIMS) {
            const float *k = ks + (c * rows + j * ATTL_DIMS) * S, *q = qt + (c * nv + v) * ATTL_LANES;
            for (int l = 0; l < ATTL_DIMS; l++) {
                __m256 qv = _mm256_loadu_ps(q + l * nv * ATTL_LANES);
#pragma GCC unroll 32
                for (int m = 0; m < ATT_SCORE_KEYS; m++)
                    a[m] = _mm256_fmadd_ps(attl_broadcast(k + (m * ATTL_DIMS + l) * S, S), qv, a[m]);
            }
        }
#pragma GCC unroll 32
        for (int m = 0; m < ATT_SCORE_KEYS; m++)
            _mm256_storeu_ps(sc + ((j + m) * nv + v) * ATTL_LANES, a[m]);
    }
}

static void attl_scores_1(const float *qt, const float *ks, size_t d, size_t rows, size_t nv, size_t v, float *sc)
{
    attl_scores(qt, ks, d, rows, nv, v, sc, 1);
}

static void attl_scores_2(const float *qt, const float *ks, size_t d, size_t rows, size_t nv, size_t v, float *sc)
{
    attl_scores(qt, ks, d, rows, nv, v, sc, 2);
}

/* The scores of vector v (count keys) become p = exp(s - M) with the new
 * running max M; alpha = exp(old M - M) rescales what was summed before
 * (0 for the first tile: exp(-87) times zeros), the same factor for the
 * sums of p and of p v, so its rounding cancels in their ratio. */
static void attl_softmax(float *sc, size_t count, size_t nv, size_t v, float *mx, double *sum, double *alpha)
{
    __m256 old = _mm256_loadu_ps(mx + v * ATTL_LANES), m = old, floor = _mm256_set1_ps(-87.0f), total = _mm256_setzero_ps();
    for (size_t j = 0; j < count; j++)
        m = _mm256_max_ps(m, _mm256_loadu_ps(sc + (j * nv + v) * ATTL_LANES));
    _mm256_storeu_ps(mx + v * ATTL_LANES, m);
    float a[ATTL_LANES], t[ATTL_LANES];
    _mm256_storeu_ps(a, v_exp(_mm256_max_ps(floor, _mm256_sub_ps(old, m))));
    for (size_t j = 0; j < count; j++) {
        float *s = sc + (j * nv + v) * ATTL_LANES;
        __m256 p = v_exp(_mm256_max_ps(floor, _mm256_sub_ps(_mm256_loadu_ps(s), m)));
        _mm256_storeu_ps(s, p);
        total = _mm256_add_ps(total, p);
    }
    _mm256_storeu_ps(t, total);
    for (size_t i = 0; i < ATTL_LANES; i++) {
        alpha[v * ATTL_LANES + i] = a[i];
        sum[v * ATTL_LANES + i] = sum[v * ATTL_LANES + i] * a[i] + t[i];
    }
}

/* acc = acc alpha + x, lane by lane in double (alpha: lanes 0-3, 4-7). */
static inline void attl_merge(double *acc, const __m256d alpha[2], __m256 x)
{
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    _mm256_storeu_pd(acc, _mm256_fmadd_pd(_mm256_loadu_pd(acc), alpha[0], lo));
    _mm256_storeu_pd(acc + 4, _mm256_fmadd_pd(_mm256_loadu_pd(acc + 4), alpha[1], hi));
}

/* acc[c][v] = acc alpha + sum_j p_j v_j[c] for the dimensions [0, dv) of
 * vector v, ATT_PV_DIMS at a time in registers over the tile's keys. */
static inline __attribute__((always_inline)) void attl_pv(const float *sc, const float *vs, size_t count,
                                                          size_t dv, size_t nv, size_t v, double *acc,
                                                          const double *alpha, const int S)
{
    const __m256d factor[2] = { _mm256_loadu_pd(alpha + v * ATTL_LANES), _mm256_loadu_pd(alpha + v * ATTL_LANES + 4) };
    for (size_t c = 0; c < dv; c += ATT_PV_DIMS) {
        __m256 a[ATT_PV_DIMS];
#pragma GCC unroll 32
        for (int i = 0; i < ATT_PV_DIMS; i++)
            a[i] = _mm256_setzero_ps();
        for (size_t j = 0; j < count; j++) {
            __m256 p = _mm256_loadu_ps(sc + (j * nv + v) * ATTL_LANES);
            const float *r = vs + (j * dv + c) * S;
#pragma GCC unroll 32
            for (int i = 0; i < ATT_PV_DIMS; i++)
                a[i] = _mm256_fmadd_ps(attl_broadcast(r + i * S, S), p, a[i]);
        }
#pragma GCC unroll 32
        for (int i = 0; i < ATT_PV_DIMS; i++)
            attl_merge(acc + ((c + i) * nv + v) * ATTL_LANES, factor, a[i]);
    }
}

static void attl_pv_1(const float *sc, const float *vs, size_t count, size_t dv, size_t nv, size_t v, double *acc,
                      const double *alpha)
{
    attl_pv(sc, vs, count, dv, nv, v, acc, alpha, 1);
}

static void attl_pv_2(const float *sc, const float *vs, size_t count, size_t dv, size_t nv, size_t v, double *acc,
                      const double *alpha)
{
    attl_pv(sc, vs, count, dv, nv, v, acc, alpha, 2);
}

/* Whether a score of vector v (count keys) passes CPU_ATTN_EXACT_ABOVE. */
static int attl_large(const float *sc, size_t count, size_t nv, size_t v)
{
    __m256 big = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    for (size_t j = 0; j < count; j++)
        big = _mm256_max_ps(big, _mm256_andnot_ps(sign, _mm256_loadu_ps(sc + (j * nv + v) * ATTL_LANES)));
    return _mm256_movemask_ps(_mm256_cmp_ps(big, _mm256_set1_ps(CPU_ATTN_EXACT_ABOVE), _CMP_GT_OQ)) != 0;
}

/* Keys [j0, j0 + count): the tile's keys of every pack, read in the
 * cache's order (one pack's heads alone, a strided read, ran 1.3x slower
 * from memory, and still slower on a loaded machine with the tile asked
 * for ahead), then each pack's scores and softmax; the same for the values
 * and p V. */
static void attl_tile(const att_job *job, attl_work *w, size_t j0, size_t count)
{
    size_t nv = job->nv, lanes = nv * ATTL_LANES, S = job->pair, rows = att_round(count, ATT_SCORE_KEYS);
    size_t pack = ATTL_TILE * job->dw * S;
    const rayo_call *c = job->call;
    attl_layout k_tile = { ATTL_DIMS * S, rows * ATTL_DIMS * S, job->dk, pack };
    attl_layout v_tile = { job->dv * S, ATTL_DIMS * S, job->dv, pack };
    attl_load_tile(job, &k_tile, c->b, job->s.k_token, job->s.k_head, j0, count, rows, w->kv);
    for (size_t k = 0; k < job->packs; k++)
        for (size_t v = 0; v < nv; v++) {
            float *sc = w->sc + k * ATTL_TILE * lanes;
            (S == 2 ? attl_scores_2 : attl_scores_1)(w->qt + k * lanes * job->dk, w->kv + k * pack, job->dk, rows, nv,
                                                     v, sc);
            if (attl_large(sc, count, nv, v))
                __atomic_store_n(job->large, 1, __ATOMIC_RELAXED);
            attl_softmax(sc, count, nv, v, w->mx + k * lanes, w->sum + k * lanes, w->alpha + k * lanes);
        }
    attl_load_tile(job, &v_tile, c->c, job->s.v_token, job->s.v_head, j0, count, count, w->kv);
    for (size_t k = 0; k < job->packs; k++)
        for (size_t v = 0; v < nv; v++)
            (S == 2 ? attl_pv_2 : attl_pv_1)(w->sc + k * ATTL_TILE * lanes, w->kv + k * pack, count, job->dv, nv, v,
                                             w->acc + k * lanes * job->dv, w->alpha + k * lanes);
}

/* The scaled query of row i in every lane that has a head; the sums zeroed. */
static void attl_start(const att_job *job, attl_work *w, size_t i)
{
    const rayo_attention_params *p = job->p;
    size_t d = p->head_dim, nv = job->nv, lanes = attl_vectors(job);
    const float *q = (const float *)job->call->a + i * job->s.q_token;
    for (size_t k = 0; k < job->packs; k++)
        for (size_t v = 0; v < nv; v++)
            for (size_t ln = 0; ln < ATTL_LANES; ln++) {
                long h = attl_head(job, k, v, ln);
                float *at = w->qt + k * nv * ATTL_LANES * job->dk + v * ATTL_LANES + ln;
                for (size_t l = 0; l < job->dk; l++)
                    at[l * nv * ATTL_LANES] = h < 0 || l >= d ? 0.0f : q[(size_t)h * job->s.q_head + l] * p->scale;
            }
    memset(w->acc, 0, lanes * job->dv * sizeof(double));
    memset(w->sum, 0, lanes * sizeof(double));
    for (size_t l = 0; l < lanes; l++)
        w->mx[l] = -INFINITY;
}

/* Row i over keys [k0, k1): out, or the segment's (max, sum, acc) per head. */
static void attl_item(const att_job *job, attl_work *w, size_t item)
{
    const rayo_attention_params *p = job->p;
    size_t seg = item % job->segments, i = item / job->segments, d = p->head_dim, nv = job->nv;
    size_t k0 = seg * job->segment_keys, k1 = k0 + job->segment_keys, seen = att_visible(p, i);
    k1 = k1 < seen ? k1 : seen;
    attl_start(job, w, i);
    for (size_t j0 = k0; j0 < k1; j0 += ATTL_TILE)
        attl_tile(job, w, j0, k1 - j0 < ATTL_TILE ? k1 - j0 : ATTL_TILE);
    for (size_t k = 0; k < job->packs; k++)
        for (size_t v = 0; v < nv; v++)
            for (size_t ln = 0; ln < ATTL_LANES; ln++) {
                long h = attl_head(job, k, v, ln);
                size_t lane = (k * nv + v) * ATTL_LANES + ln;
                const double *acc = w->acc + k * nv * ATTL_LANES * job->dv + v * ATTL_LANES + ln;
                if (h < 0)
                    continue;
                if (job->segments > 1) { /* kept for the merge */
                    double *part = job->partial + (item * p->n_heads + (size_t)h) * (job->dp + 2);
                    part[0] = w->mx[lane], part[1] = w->sum[lane];
                    for (size_t l = 0; l < d; l++)
                        part[2 + l] = acc[l * nv * ATTL_LANES];
                    continue;
                }
                float *out = (float *)job->call->y + i * job->s.o_token + (size_t)h * job->s.o_head;
                double inv = 1.0 / w->sum[lane];
                for (size_t l = 0; l < d; l++)
                    out[l] = (float)(acc[l * nv * ATTL_LANES] * inv);
            }
}

/* Task t's items [*lo, *hi).  Under a causal mask a later query row sees
 * more keys, so a later task costs more, and the pool hands tasks out in
 * order: they go from the last items to the first, the heaviest first and
 * the light ones filling in at the end.  A 128-row prompt at 2 threads has
 * 8 tasks, the last 23% of the work: in order the two threads would end at
 * 56% and 44% of it (the last task alone on one), heaviest first at 50%. */
static void att_task_items(const att_job *job, size_t task, size_t *lo, size_t *hi)
{
    size_t tasks = (job->items + job->per_task - 1) / job->per_task;
    if (job->p->flags & RAYO_ATTN_CAUSAL)
        task = tasks - 1 - task;
    *lo = task * job->per_task;
    *hi = *lo + job->per_task < job->items ? *lo + job->per_task : job->items;
}

static void attl_task(void *arg, size_t task, unsigned worker)
{
    const att_job *job = arg;
    attl_work w = attl_work_of(job, worker);
    size_t lo, hi;
    att_task_items(job, task, &lo, &hi);
    for (size_t item = lo; item < hi; item++)
        attl_item(job, &w, item);
}

/* Heads in lanes where a vector holds at least half a vector of query
 * heads (of one KV head, or of two): pair, vectors per pack, packs. */
static int attl_plan(att_job *job)
{
    size_t g = job->group;
    if (job->rows != 1 || 2 * g < ATTL_LANES)
        return 0;
    job->pair = g <= ATTL_LANES / 2 ? 2 : 1;
    job->nv = (g * job->pair + ATTL_LANES - 1) / ATTL_LANES;
    job->packs = (job->p->n_kv_heads + job->pair - 1) / job->pair;
    job->dk = att_round(job->p->head_dim, ATTL_DIMS);
    job->dv = att_round(job->p->head_dim, ATT_PV_DIMS);
    job->dw = job->dk > job->dv ? job->dk : job->dv;
    return 1;
}

static void att_task(void *arg, size_t task, unsigned worker)
{
    const att_job *job = arg;
    att_work w = att_work_of(job, worker);
    size_t lo, hi;
    att_task_items(job, task, &lo, &hi);
    for (size_t item = lo; item < hi; item++)
        att_item(job, &w, item);
}

/* Items: blocks of query rows, or (fewer rows than threads) single rows x
 * key segments; tasks of whole items. */
static void att_split(att_job *job, size_t threads)
{
    const rayo_attention_params *p = job->p;
    double work = (double)p->n_q * (double)p->n_heads * (double)p->n_kv * (double)p->head_dim * 2;
    size_t tasks = 1;
    job->segments = 1;
    job->rows = p->n_q < ATT_ROWS ? p->n_q : ATT_ROWS;
    if (threads > 1 && work >= (double)CPU_PARALLEL_MIN_WORK) {
        size_t per_thread = p->n_q / (2 * threads); /* at least two blocks per thread */
        job->rows = per_thread < 1 ? 1 : per_thread < ATT_ROWS ? per_thread : ATT_ROWS;
        if (p->n_q < threads) {
            size_t most = (p->n_kv + ATT_MIN_SEGMENT - 1) / ATT_MIN_SEGMENT;
            size_t want = (2 * threads + p->n_q - 1) / p->n_q;
            want = want < ATT_MAX_SEGMENTS ? want : ATT_MAX_SEGMENTS;
            job->segments = want < most ? want : most;
        }
        tasks = 4 * threads;
    }
    job->segment_keys = att_round((p->n_kv + job->segments - 1) / job->segments, ATTL_TILE);
    job->segments = (p->n_kv + job->segment_keys - 1) / job->segment_keys;
    job->items = (p->n_q + job->rows - 1) / job->rows * job->segments;
    tasks = tasks < job->items ? tasks : job->items;
    job->per_task = (job->items + tasks - 1) / tasks;
}

/* The planned job on the thread pool, heads in lanes or not. */
static rayo_status att_run(const cpu_state *st, att_job *job, size_t threads, int lanes)
{
    const rayo_attention_params *p = job->p;
    size_t tasks = (job->items + job->per_task - 1) / job->per_task;
    job->per_worker = lanes ? attl_floats_per_worker(job) : att_floats_per_worker(p, job->rows, job->dp);
    job->scratch = cpu_alloc_floats(st, (tasks > 1 ? threads : 1) * job->per_worker);
    job->partial = NULL;
    if (job->segments > 1)
        job->partial = (double *)(void *)cpu_alloc_floats(st, 2 * job->items * p->n_heads * (job->dp + 2));
    if (!job->scratch || (job->segments > 1 && !job->partial)) {
        cpu_free(st, job->scratch);
        cpu_free(st, job->partial);
        return RAYO_E_NOMEM;
    }
    cpu_parallel(st, tasks, lanes ? attl_task : att_task, job);
    if (job->segments > 1)
        att_merge_segments(job);
    cpu_free(st, job->scratch);
    cpu_free(st, job->partial);
    return RAYO_OK;
}

CPU_KERNEL_FN(attention)
{
    const cpu_state *st = state;
    const rayo_attention_params *p = call->params;
    if (p->n_q == 0 || p->n_heads == 0 || p->head_dim == 0)
        return RAYO_OK;
    rayo_status status = cpu_attention_check(call, p);
    if (status != RAYO_OK)
        return status;
    if (p->head_dim > ((size_t)1 << 20) || p->n_heads > ((size_t)1 << 20))
        return RAYO_E_NOMEM; /* the scratch would not fit memory anyway; no size overflow below */
    att_job job = { .call = call, .p = p, .f16 = RAYO_DTYPE_OF(call->dtypes, 1) == RAYO_DTYPE_F16,
                    .s = cpu_attention_layout_of(p), .group = p->n_heads / p->n_kv_heads,
                    .dp = att_round(p->head_dim, 2 * VF_LANES) };
    size_t threads = cpu_threads(st);
    att_split(&job, threads);
    int large = 0;
    job.large = &large;
    rayo_status r = att_run(st, &job, threads, attl_plan(&job));
    if (r == RAYO_OK && large) /* heads in lanes met large scores: the exact way */
        r = att_run(st, &job, threads, 0);
    return r;
}
