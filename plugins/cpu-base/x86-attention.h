/* x86-attention.h - attention of the avx2 and avx512 backends, included by
 * x86-infer.h (the same VF / vf_* operations; see there).
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
 * Threads: blocks of query rows are items (at least two per thread); when
 * there are fewer rows than threads (decode), items are single rows x key
 * segments, each keeps its (max, sum, acc) per head, and the calling thread
 * merges the segments.
 */

#define ATT_TILE 32       /* keys per tile: float sums of at most this many terms */
#define ATT_MIN_SEGMENT 256 /* keys per segment at least, when keys are split */
#define ATT_MAX_SEGMENTS 64
#define ATT_ROWS 4        /* query rows of one item (prefill): they share each tile */

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

/* Turns the scores of head h into p = exp(s - M) (zeros past count) with
 * the new running max M; returns the factor for what was summed before. */
static double att_softmax_tile(att_work *w, size_t h, size_t count)
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
    if (m > w->mx[h]) {
        alpha = exp(w->mx[h] - (double)m); /* 0 for the first tile */
        w->mx[h] = m;
    }
    /* exp(-87) ~ 1e-38 stands for smaller weights: far below the contract,
     * and it keeps exp on its fast path. */
    VF vm = vf_set((float)w->mx[h]), floor = vf_set(-87.0f), total = vf_zero();
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
        for (l = 0; l < nh; l++)
            alpha[l] = att_softmax_tile(w, h + l, count);
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

static void att_task(void *arg, size_t task, unsigned worker)
{
    const att_job *job = arg;
    att_work w = att_work_of(job, worker);
    size_t lo = task * job->per_task, hi = lo + job->per_task < job->items ? lo + job->per_task : job->items;
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
    job->segment_keys = att_round((p->n_kv + job->segments - 1) / job->segments, ATT_TILE);
    job->segments = (p->n_kv + job->segment_keys - 1) / job->segment_keys;
    job->items = (p->n_q + job->rows - 1) / job->rows * job->segments;
    tasks = tasks < job->items ? tasks : job->items;
    job->per_task = (job->items + tasks - 1) / tasks;
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
    size_t tasks = (job.items + job.per_task - 1) / job.per_task;
    job.per_worker = att_floats_per_worker(p, job.rows, job.dp);
    job.scratch = cpu_alloc_floats(st, (tasks > 1 ? threads : 1) * job.per_worker);
    if (job.segments > 1)
        job.partial = (double *)(void *)cpu_alloc_floats(st, 2 * job.items * p->n_heads * (job.dp + 2));
    if (!job.scratch || (job.segments > 1 && !job.partial)) {
        cpu_free(st, job.scratch);
        cpu_free(st, job.partial);
        return RAYO_E_NOMEM;
    }
    cpu_parallel(st, tasks, att_task, &job);
    if (job.segments > 1)
        att_merge_segments(&job);
    cpu_free(st, job.scratch);
    cpu_free(st, job.partial);
    return RAYO_OK;
}
