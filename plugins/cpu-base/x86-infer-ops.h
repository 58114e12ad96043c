/* x86-infer-ops.h - the op-table entries of the inference kernels of
 * x86-infer_tmpl.c, included inside the op table of the avx2 and avx512 plugins
 * (CPU_KERNEL names the plugin's kernels): every dtype combination of
 * rayo-ops.h of convert, get_rows, rope, attention and the gated units. */
#define X86_INFER_ENTRY(OP, A, B, C, Y, NAME)                                                  \
    {RAYO_OP_##OP, RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y), \
     CPU_KERNEL(NAME)},
X86_INFER_ENTRY(CONVERT, F32, NONE, NONE, F16, convert)
X86_INFER_ENTRY(CONVERT, F16, NONE, NONE, F32, convert)
X86_INFER_ENTRY(CONVERT, F32, NONE, NONE, BF16, convert)
X86_INFER_ENTRY(CONVERT, BF16, NONE, NONE, F32, convert)
X86_INFER_ENTRY(CONVERT, F32, NONE, NONE, Q8_0, convert)
X86_INFER_ENTRY(CONVERT, F32, NONE, NONE, Q4_0, convert)
X86_INFER_ENTRY(CONVERT, Q8_0, NONE, NONE, F32, convert)
X86_INFER_ENTRY(CONVERT, Q4_0, NONE, NONE, F32, convert)
X86_INFER_ENTRY(CONVERT, Q4_K, NONE, NONE, F32, convert)
X86_INFER_ENTRY(CONVERT, Q6_K, NONE, NONE, F32, convert)
X86_INFER_ENTRY(GET_ROWS, F32, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(GET_ROWS, F16, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(GET_ROWS, BF16, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(GET_ROWS, Q8_0, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(GET_ROWS, Q4_0, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(GET_ROWS, Q4_K, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(GET_ROWS, Q6_K, I32, NONE, F32, get_rows)
X86_INFER_ENTRY(ROPE, F32, I32, NONE, F32, rope)
X86_INFER_ENTRY(ATTENTION, F32, F32, F32, F32, attention)
X86_INFER_ENTRY(ATTENTION, F32, F16, F16, F32, attention)
X86_INFER_ENTRY(SWIGLU, F32, F32, NONE, F32, swiglu)
X86_INFER_ENTRY(GEGLU, F32, F32, NONE, F32, geglu)
X86_INFER_ENTRY(GEGLU_TANH, F32, F32, NONE, F32, geglu_tanh)
#undef X86_INFER_ENTRY
