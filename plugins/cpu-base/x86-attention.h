/* x86-attention.h - attention of the avx2 and avx512 backends, included by
 * x86-infer.h (the same VF / vf_* operations; see there).
 *
 * out = softmax(scale Q K^T + causal mask) V, grouped-query.  A work item is
 * one query row and up to ATT_HEADS query heads of one KV head: they share
 * every key and value row, so a row of an f16 cache is widened once for all
 * of them (decode with 8 query heads per KV head reads the cache once).
 * Keys go by tiles of ATT_TILE rows, copied (f32) or widened (f16) into the
 * worker's scratch, padded with zeros to whole vectors, so the inner loops
 * have no tails.  Per tile and head:
 *   scores   4 keys at a time, float FMAs along the head dimension;
 *   softmax  online: the running maximum M, p = exp(s - M) in float; when a
 *            tile raises M, what was accumulated is scaled by exp(old - M)
 *            (in double), so nothing overflows and no score outlives its
 *            tile (no score matrix, whatever the cache length);
 *   p V      PV_HEADS heads x 2 vectors of the head dimension in registers,
 *            float FMAs over the tile's keys;
 * and the tile's float sums are added into double accumulators: float error
 * stays that of ATT_TILE terms (~4e-6 of sum p |v| at worst), however long
 * the cache.  Items are spread over the pool, each worker with its scratch.
 */

#define ATT_TILE 64  /* keys per tile: float sums of at most this many terms */
#define ATT_HEADS 8  /* query heads of one item */

typedef struct att_job {
    const rayo_call *call;
    const rayo_attention_params *p;
    int f16;
    cpu_attention_layout s;
    size_t group, chunks;   /* query heads per KV head; items per (query, KV head) */
    size_t dp;              /* head_dim padded to 2 vectors */
    size_t items, per_task;
    float *scratch;
    size_t per_worker;      /* floats */
} att_job;

typedef struct att_work {
    float *q, *kt, *vt;     /* ATT_HEADS query rows, a tile of keys and of values (dp each) */
    float *pr, *tacc;       /* scores then p (ATT_TILE per head); the tile's p V (dp per head) */
    double *acc, *mx, *sum; /* per head: sum of p v (dp), running max, sum of p */
} att_work;

static size_t att_round(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

static att_work att_work_of(const att_job *job, unsigned worker)
{
    size_t dp = job->dp;
    float *f = job->scratch + (size_t)worker * job->per_worker;
    att_work w;
    w.acc = (double *)(void *)f; /* doubles first: 64-byte aligned */
    w.mx = w.acc + ATT_HEADS * dp;
    w.sum = w.mx + ATT_HEADS;
    f += 2 * (ATT_HEADS * dp + 2 * ATT_HEADS);
    w.q = f, f += ATT_HEADS * dp;
    w.kt = f, f += ATT_TILE * dp;
    w.vt = f, f += ATT_TILE * dp;
    w.tacc = f, f += ATT_HEADS * dp;
    w.pr = f;
    return w;
}

static size_t att_floats_per_worker(size_t dp)
{
    size_t n = 2 * (ATT_HEADS * dp + 2 * ATT_HEADS) + 2 * ATT_HEADS * dp + 2 * ATT_TILE * dp + ATT_HEADS * ATT_TILE;
    return att_round(n, 16); /* each worker's part 64-byte aligned */
}

/* count rows of KV head g from token j0 on, as f32 rows of dp (zero-padded);
 * rows up to a multiple of 4 are zeros. */
static void att_load_rows(const att_job *job, const void *base, size_t token_stride, size_t head_stride,
                          size_t g, size_t j0, size_t count, float *dst)
{
    size_t d = job->p->head_dim, dp = job->dp;
    for (size_t r = 0; r < count; r++) {
        size_t at = (j0 + r) * token_stride + g * head_stride;
        float *row = dst + r * dp;
        if (job->f16)
            f16_row_to_f32((const unsigned char *)base + 2 * at, row, d);
        else
            memcpy(row, (const float *)base + at, d * sizeof(float));
        if (dp > d)
            memset(row + d, 0, (dp - d) * sizeof(float));
    }
    if (count % 4)
        memset(dst + count * dp, 0, (4 - count % 4) * dp * sizeof(float));
}

/* s[j] = scale q . k_j for keys [0, count rounded up to 4). */
static void att_scores(const float *q, const float *kt, size_t dp, size_t count, float scale, float *s)
{
    for (size_t j = 0; j < count; j += 4) {
        const float *k = kt + j * dp;
        VF a0 = vf_zero(), a1 = vf_zero(), a2 = vf_zero(), a3 = vf_zero();
        for (size_t l = 0; l < dp; l += VF_LANES) {
            VF qv = vf_load(q + l);
            a0 = vf_fma(qv, vf_load(k + l), a0);
            a1 = vf_fma(qv, vf_load(k + dp + l), a1);
            a2 = vf_fma(qv, vf_load(k + 2 * dp + l), a2);
            a3 = vf_fma(qv, vf_load(k + 3 * dp + l), a3);
        }
        _mm_storeu_ps(s + j, _mm_mul_ps(vf_sum4(a0, a1, a2, a3), _mm_set1_ps(scale)));
    }
}

/* Turns the scores of head hh into p = exp(s - M) (zeros past count) with
 * the new running max M; returns the factor for what was summed before. */
static double att_softmax_tile(att_work *w, size_t hh, size_t count)
{
    float *s = w->pr + hh * ATT_TILE;
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
    if (m > w->mx[hh]) {
        alpha = exp(w->mx[hh] - (double)m); /* 0 for the first tile */
        w->mx[hh] = m;
    }
    /* exp(-87) ~ 1e-38 stands for smaller weights: far below the contract,
     * and it keeps exp on its fast path. */
    VF vm = vf_set((float)w->mx[hh]), floor = vf_set(-87.0f), total = vf_zero();
    for (size_t j = 0; j < padded; j += VF_LANES)
        vf_store(s + j, vf_exp(vf_max(floor, vf_sub(vf_load(s + j), vm))));
    for (size_t j = count; j < padded; j++)
        s[j] = 0.0f;
    for (size_t j = 0; j < padded; j += VF_LANES)
        total = vf_add(total, vf_load(s + j));
    w->sum[hh] = w->sum[hh] * alpha + (double)vf_hsum(total);
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

/* Keys [j0, j0 + count) for the nh heads of an item at KV head g. */
static void att_tile(const att_job *job, att_work *w, size_t g, size_t nh, size_t j0, size_t count)
{
    const rayo_call *c = job->call;
    size_t dp = job->dp;
    att_load_rows(job, c->b, job->s.k_token, job->s.k_head, g, j0, count, w->kt);
    att_load_rows(job, c->c, job->s.v_token, job->s.v_head, g, j0, count, w->vt);
    double alpha[ATT_HEADS];
    for (size_t hh = 0; hh < nh; hh++) {
        att_scores(w->q + hh * dp, w->kt, dp, count, job->p->scale, w->pr + hh * ATT_TILE);
        alpha[hh] = att_softmax_tile(w, hh, count);
    }
    size_t hh = 0;
    for (; hh + PV_HEADS <= nh; hh += PV_HEADS)
        att_pv_many(w->pr + hh * ATT_TILE, w->vt, dp, count, w->tacc + hh * dp);
    for (; hh < nh; hh++)
        att_pv_one(w->pr + hh * ATT_TILE, w->vt, dp, count, w->tacc + hh * dp);
    for (hh = 0; hh < nh; hh++)
        att_merge(w->acc + hh * dp, w->tacc + hh * dp, alpha[hh], dp);
}

static void att_item(const att_job *job, att_work *w, size_t item)
{
    const rayo_attention_params *p = job->p;
    const rayo_call *c = job->call;
    size_t chunk = item % job->chunks, g = item / job->chunks % p->n_kv_heads;
    size_t i = item / job->chunks / p->n_kv_heads, d = p->head_dim, dp = job->dp;
    size_t h0 = g * job->group + chunk * ATT_HEADS;
    size_t nh = job->group - chunk * ATT_HEADS < ATT_HEADS ? job->group - chunk * ATT_HEADS : ATT_HEADS;
    size_t visible = (p->flags & RAYO_ATTN_CAUSAL) ? p->n_kv - p->n_q + i + 1 : p->n_kv;
    for (size_t hh = 0; hh < nh; hh++) {
        memcpy(w->q + hh * dp, (const float *)c->a + i * job->s.q_token + (h0 + hh) * job->s.q_head, d * sizeof(float));
        memset(w->q + hh * dp + d, 0, (dp - d) * sizeof(float));
        memset(w->acc + hh * dp, 0, dp * sizeof(double));
        w->mx[hh] = -INFINITY;
        w->sum[hh] = 0.0;
    }
    for (size_t j0 = 0; j0 < visible; j0 += ATT_TILE)
        att_tile(job, w, g, nh, j0, visible - j0 < ATT_TILE ? visible - j0 : ATT_TILE);
    for (size_t hh = 0; hh < nh; hh++) {
        float *out = (float *)c->y + i * job->s.o_token + (h0 + hh) * job->s.o_head;
        for (size_t l = 0; l < d; l++)
            out[l] = (float)(w->acc[hh * dp + l] / w->sum[hh]);
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

CPU_KERNEL_FN(attention)
{
    const cpu_state *st = state;
    const rayo_attention_params *p = call->params;
    if (p->n_q == 0 || p->n_heads == 0 || p->head_dim == 0)
        return RAYO_OK;
    rayo_status status = cpu_attention_check(call, p);
    if (status != RAYO_OK)
        return status;
    if (p->head_dim > ((size_t)1 << 24))
        return RAYO_E_NOMEM; /* the scratch size would overflow long before */
    att_job job = { .call = call, .p = p, .f16 = RAYO_DTYPE_OF(call->dtypes, 1) == RAYO_DTYPE_F16,
                    .group = p->n_heads / p->n_kv_heads, .dp = att_round(p->head_dim, 2 * VF_LANES) };
    job.s = cpu_attention_layout_of(p);
    job.chunks = (job.group + ATT_HEADS - 1) / ATT_HEADS;
    job.items = p->n_q * p->n_kv_heads * job.chunks;
    size_t threads = cpu_threads(st), tasks = 1;
    double work = (double)p->n_q * (double)p->n_heads * (double)p->n_kv * (double)p->head_dim * 2;
    if (threads > 1 && work >= (double)CPU_PARALLEL_MIN_WORK)
        tasks = 4 * threads < job.items ? 4 * threads : job.items;
    job.per_task = (job.items + tasks - 1) / tasks;
    tasks = (job.items + job.per_task - 1) / job.per_task;
    job.per_worker = att_floats_per_worker(job.dp);
    job.scratch = cpu_alloc_floats(st, (tasks > 1 ? threads : 1) * job.per_worker);
    if (!job.scratch)
        return RAYO_E_NOMEM;
    cpu_parallel(st, tasks, att_task, &job);
    cpu_free(st, job.scratch);
    return RAYO_OK;
}
