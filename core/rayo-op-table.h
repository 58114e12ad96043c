/* rayo-op-table.h - the op table of a plugin that implements every op.
 *
 * Generated from the op list, so a plugin that implements all ops never
 * lists them by hand, and a new op in rayo-ops.h is a compile error (a
 * missing PREFIX_NAME function) instead of a silent gap:
 *
 *   #define RAYO_KERNEL(NAME) scalar_##NAME
 *   static const rayo_op_entry scalar_ops[] = {
 *   #include <rayo-op-table.h>
 *   };
 *
 * A plugin with only some ops lists {RAYO_OP_ADD, my_add}, ... itself. */
#ifndef RAYO_KERNEL
#error "define RAYO_KERNEL(NAME) to name the plugin's kernel for op NAME"
#endif
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) {RAYO_OP_##ENUM, RAYO_KERNEL(NAME)},
#include "rayo-ops.h"
#undef RAYO_OP
#undef RAYO_KERNEL
