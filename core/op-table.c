/* SPDX-License-Identifier: MIT */
/* op-table.c - the op table and the dtype combinations, generated from the
 * one op list (rayo-ops.h), and the public functions that look them up. */
#include "internal.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

const rayo_op_info rayo__op_table[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) \
    {sizeof(rayo_op_info), RAYO_OP_##ENUM, #NAME, RAYO_SIG_##SIG, TR, TA, RAYO_SCALE_##SC, DOC},
#include "rayo-ops.h"
#undef RAYO_OP
};
#define op_table rayo__op_table
#define OP_COUNT ((size_t)OP_POSITION_LIMIT)
_Static_assert(sizeof rayo__op_table / sizeof rayo__op_table[0] == OP_POSITION_LIMIT, "op table and positions");

const unsigned char rayo__op_index[RAYO_OP_ID_LIMIT] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) [ID] = OP_POSITION_##ENUM + 1,
#include "rayo-ops.h"
#undef RAYO_OP
};
#define op_index rayo__op_index

RAYO_API size_t rayo_op_count(void)
{
    return OP_COUNT;
}

RAYO_API const rayo_op_info *rayo_op_at(size_t index)
{
    return index < OP_COUNT ? &op_table[index] : NULL;
}

RAYO_API const rayo_op_info *rayo_op_by_id(uint32_t id)
{
    return op_info(id);
}

RAYO_API const rayo_op_info *rayo_op_by_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < OP_COUNT; i++)
        if (!strcmp(op_table[i].name, name))
            return &op_table[i];
    return NULL;
}

/* ---- dtype combinations ---- */
/* The RAYO_COMBO lines as written. */
static const struct combo_line {
    uint32_t op, dtypes;
    double tol_rel, tol_abs, relaxed_rel, relaxed_abs;
} combo_lines[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA) \
    {RAYO_OP_##OP, RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y), TR, TA, RR, RA},
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP
};
#define COMBO_LINES (sizeof combo_lines / sizeof combo_lines[0])

/* Every op's combinations, grouped by op in list order: its RAYO_COMBO
 * lines, or one all-f32 combination with the op's contract.  Built once. */
#define COMBO_CAP (OP_COUNT + COMBO_LINES)
static rayo_combo_info combos[COMBO_CAP];
static char combo_names[COMBO_CAP][48];
static uint16_t combo_base[OP_COUNT], combo_count[OP_COUNT];
static uint32_t operand_masks[OP_COUNT][4];
static pthread_once_t combos_once = PTHREAD_ONCE_INIT;

unsigned op_sig_operands(int sig)
{
    switch (sig) {
    case RAYO_SIG_BINARY: case RAYO_SIG_REDUCE2: case RAYO_SIG_MATMUL: case RAYO_SIG_GEMV:
    case RAYO_SIG_BIAS_ACT: case RAYO_SIG_GET_ROWS: case RAYO_SIG_ROPE: case RAYO_SIG_GLU:
        return 0xbu; /* a, b, y */
    case RAYO_SIG_NORM: case RAYO_SIG_ATTENTION: return 0xfu;
    default: return 0x9u; /* a, y */
    }
}

static void name_combo(rayo_combo_info *ci, char *buf, size_t size, int sig)
{
    size_t len = 0;
    buf[0] = '\0';
    if (ci->dtypes == 0) {
        snprintf(buf, size, "f32");
    } else {
        for (unsigned i = 0; i < 4; i++)
            if (op_sig_operands(sig) & (1u << i))
                len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "." : "",
                                        rayo_dtype_name(RAYO_DTYPE_OF(ci->dtypes, i)));
    }
    ci->name = buf;
}

static void build_combos(void)
{
    size_t next = 0;
    for (size_t o = 0; o < OP_COUNT; o++) {
        const rayo_op_info *op = &op_table[o];
        combo_base[o] = (uint16_t)next;
        for (size_t i = 0; i < COMBO_LINES; i++) {
            if (combo_lines[i].op != (uint32_t)op->id)
                continue;
            const struct combo_line *l = &combo_lines[i];
            combos[next] = (rayo_combo_info){sizeof(rayo_combo_info), op->id, l->dtypes, NULL,
                                             l->tol_rel, l->tol_abs, l->relaxed_rel, l->relaxed_abs};
            next++;
        }
        if (next == combo_base[o]) /* no lines: all-f32 only, one contract */
            combos[next++] = (rayo_combo_info){sizeof(rayo_combo_info), op->id, 0, NULL,
                                               op->tol_rel, op->tol_abs, op->tol_rel, op->tol_abs};
        combo_count[o] = (uint16_t)(next - combo_base[o]);
        for (size_t c = combo_base[o]; c < next; c++) {
            name_combo(&combos[c], combo_names[c], sizeof combo_names[c], (int)op->sig);
            for (unsigned i = 0; i < 4; i++)
                if (op_sig_operands((int)op->sig) & (1u << i))
                    operand_masks[o][i] |= RAYO_DTYPE_BIT(RAYO_DTYPE_OF(combos[c].dtypes, i));
        }
    }
}

/* Position of an op in the list, or -1. */
static inline int op_position(uint32_t id)
{
    return id < RAYO_OP_ID_LIMIT && op_index[id] ? op_index[id] - 1 : -1;
}

RAYO_API size_t rayo_op_combo_count(rayo_op op)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    return o < 0 ? 0 : combo_count[o];
}

RAYO_API const rayo_combo_info *rayo_op_combo(rayo_op op, size_t index)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    return o < 0 || index >= combo_count[o] ? NULL : &combos[combo_base[o] + index];
}

_Static_assert(COMBO_CAP <= COMBO_SLOTS, "more dtype combinations than COMBO_SLOTS (internal.h)");

int op_combo_slot(uint32_t op, uint32_t dtypes)
{
    int i = op_combo_index(op, dtypes);
    return i < 0 ? -1 : combo_base[op_position(op)] + i;
}

int op_combo_index(uint32_t op, uint32_t dtypes)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    if (o < 0)
        return -1;
    for (size_t i = 0; i < combo_count[o]; i++)
        if (combos[combo_base[o] + i].dtypes == dtypes)
            return (int)i;
    return -1;
}

RAYO_API const rayo_combo_info *rayo_op_combo_find(rayo_op op, uint32_t dtypes)
{
    int i = op_combo_index(op, dtypes);
    return i < 0 ? NULL : rayo_op_combo(op, (size_t)i);
}

RAYO_API uint32_t rayo_op_operand_dtypes(rayo_op op, unsigned operand)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    return o < 0 || operand > 3 ? 0 : operand_masks[o][operand];
}
