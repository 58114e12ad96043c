/* SPDX-License-Identifier: MIT */
/* plugin-check.c - checks on a plugin file and its descriptor that need no
 * trust in the plugin: the ELF headers before dlopen, and the descriptor's
 * place and pointers after it (every pointer must point into the plugin's
 * own loaded segments, code pointers into executable ones).
 *
 * Pure functions over bytes and address ranges, so that the fuzz targets
 * (tests/fuzz/) can call them directly. */
#include "internal.h"
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#ifndef __EMSCRIPTEN__
#include <elf.h>
#endif

static bool fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- the ELF file, before dlopen ---- */
#ifndef __EMSCRIPTEN__
static const char *machine_name(unsigned machine)
{
    switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "32-bit arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390x";
    default: return NULL;
    }
}

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#endif

static bool ident_ok(const unsigned char *head, size_t len, char *why, size_t size)
{
    if (len < EI_NIDENT || memcmp(head, ELFMAG, SELFMAG) != 0)
        return fail(why, size, "not an ELF shared object (no ELF header)");
    if (head[EI_CLASS] != ELFCLASS64 || sizeof(void *) != 8)
        return fail(why, size, "ELF class %u: this core loads only 64-bit plugins", head[EI_CLASS]);
    unsigned char native_data = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    native_data = ELFDATA2LSB;
#else
    native_data = ELFDATA2MSB;
#endif
    if (head[EI_DATA] != native_data)
        return fail(why, size, "ELF byte order differs from this machine's");
    if (len < sizeof(Elf64_Ehdr))
        return fail(why, size, "truncated ELF file (%zu bytes)", len);
    return true;
}

static bool machine_ok(const Elf64_Ehdr *eh, char *why, size_t size)
{
#ifdef NATIVE_MACHINE
    if (eh->e_machine != NATIVE_MACHINE) {
        const char *name = machine_name(eh->e_machine);
        if (name)
            return fail(why, size, "built for %s, this machine is %s", name, machine_name(NATIVE_MACHINE));
        return fail(why, size, "built for ELF machine %u, this machine is %s", eh->e_machine,
                    machine_name(NATIVE_MACHINE));
    }
#else
    (void)eh; (void)why; (void)size;
#endif
    return true;
}

/* Every loadable segment must come from bytes the file has: a segment past
 * the end of a truncated file would fault (SIGBUS) when first touched. */
static bool segments_ok(const unsigned char *head, size_t len, uint64_t file_size, const Elf64_Ehdr *eh,
                        char *why, size_t size)
{
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0)
        return fail(why, size, "ELF program headers missing or of size %u", eh->e_phentsize);
    uint64_t table = (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr);
    if (eh->e_phoff > len || table > len - eh->e_phoff)
        return fail(why, size, "truncated ELF file: program headers at %" PRIu64 " past the %zu bytes read",
                    (uint64_t)eh->e_phoff, len);
    size_t loads = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, head + eh->e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
        if (ph.p_type != PT_LOAD)
            continue;
        loads++;
        if (ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset)
            return fail(why, size, "truncated ELF file: segment %u needs bytes up to %" PRIu64
                        ", the file has %" PRIu64, i, (uint64_t)(ph.p_offset + ph.p_filesz), file_size);
        if (ph.p_filesz > ph.p_memsz)
            return fail(why, size, "malformed ELF file: segment %u larger in the file than in memory", i);
    }
    if (!loads)
        return fail(why, size, "ELF file without loadable segments");
    return true;
}

bool plugin_elf_ok(const unsigned char *head, size_t len, uint64_t file_size, char *why, size_t size)
{
    if (!ident_ok(head, len, why, size))
        return false;
    Elf64_Ehdr eh;
    memcpy(&eh, head, sizeof eh);
    if (eh.e_type != ET_DYN)
        return fail(why, size, "ELF type %u: not a shared object", eh.e_type);
    return machine_ok(&eh, why, size) && segments_ok(head, len, file_size, &eh, why, size);
}
#else
bool plugin_elf_ok(const unsigned char *head, size_t len, uint64_t file_size, char *why, size_t size)
{
    (void)head; (void)len; (void)file_size; (void)why; (void)size;
    return true; /* WebAssembly side modules: the engine validates them */
}
#endif

/* ---- the descriptor, after dlopen, before any call ---- */
static bool in_map(const plugin_map *map, uintptr_t p, size_t bytes, bool exec)
{
    for (size_t i = 0; i < map->count; i++) {
        const plugin_segment *s = &map->seg[i];
        if (p >= s->start && p <= s->end && bytes <= s->end - p && (!exec || s->exec))
            return true;
    }
    return false;
}

/* A misaligned table is undefined behaviour to read (SIGBUS on some CPUs). */
#define ALIGNED(p, type) (((uintptr_t)(p) % _Alignof(type)) == 0)

static bool code_ok(const plugin_map *map, const void *fn)
{
    return in_map(map, (uintptr_t)fn, 1, true);
}

bool plugin_symbol_ok(const plugin_map *map, const void *desc, size_t sym_size, char *why, size_t size)
{
    if (!in_map(map, (uintptr_t)desc, sym_size ? sym_size : 1, false))
        return fail(why, size, "'%s' does not lie in the plugin's loaded segments (an absolute or foreign symbol)",
                    RAYO_PLUGIN_SYMBOL);
    if (!ALIGNED(desc, rayo_plugin_descriptor))
        return fail(why, size, "'%s' is misaligned", RAYO_PLUGIN_SYMBOL);
    if (sym_size < DESCRIPTOR_V1_0_SIZE)
        return fail(why, size, "'%s' is %zu bytes, a descriptor has at least %zu", RAYO_PLUGIN_SYMBOL,
                    sym_size, (size_t)DESCRIPTOR_V1_0_SIZE);
    return true;
}

static bool memory_api_ok(const plugin_map *map, const rayo_memory_api *m, char *why, size_t size)
{
    if (!in_map(map, (uintptr_t)m, sizeof m->struct_size, false) || !ALIGNED(m, rayo_memory_api))
        return fail(why, size, "memory API table points outside the plugin or is misaligned");
    if (m->struct_size < RAYO_MEMORY_API_V1_0_SIZE)
        return fail(why, size, "memory API table of %zu bytes, need %zu", m->struct_size,
                    (size_t)RAYO_MEMORY_API_V1_0_SIZE);
    size_t known = m->struct_size < sizeof *m ? m->struct_size : sizeof *m;
    if (!in_map(map, (uintptr_t)m, known, false))
        return fail(why, size, "memory API table points outside the plugin");
    const void *fns[] = {(const void *)m->buffer_alloc, (const void *)m->buffer_free,
                         (const void *)m->buffer_write, (const void *)m->buffer_read,
                         (const void *)m->batch_begin, (const void *)m->batch_record,
                         (const void *)m->batch_submit, (const void *)m->batch_wait,
                         (const void *)m->batch_free};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (!code_ok(map, fns[i]))
            return fail(why, size, "memory API function %zu is %s", i,
                        fns[i] ? "not code of the plugin" : "NULL");
    if (known == sizeof *m && m->batch_set_step && !code_ok(map, (const void *)m->batch_set_step))
        return fail(why, size, "memory API's batch_set_step is not code of the plugin");
    return true;
}

static bool ops_ok(const plugin_map *map, const rayo_plugin_descriptor *d, char *why, size_t size)
{
    size_t stride = d->op_entry_size;
    if (d->op_count > PLUGIN_MAX_OPS)
        return fail(why, size, "op_count %zu is more than %d", d->op_count, PLUGIN_MAX_OPS);
    if (stride < OP_ENTRY_V1_0_SIZE || stride > 4096 || stride % _Alignof(rayo_op_entry))
        return fail(why, size, "op_entry_size %zu: an op table entry is at least %zu bytes, a multiple of %zu "
                    "(set .op_entry_size = sizeof(rayo_op_entry))", stride, (size_t)OP_ENTRY_V1_0_SIZE,
                    (size_t)_Alignof(rayo_op_entry));
    if (d->op_count && (!in_map(map, (uintptr_t)d->ops, d->op_count * stride, false) ||
                        !ALIGNED(d->ops, rayo_op_entry)))
        return fail(why, size, "op table (%zu entries) does not lie in the plugin", d->op_count);
    for (size_t i = 0; i < d->op_count; i++) {
        const rayo_op_entry *e = (const rayo_op_entry *)(const void *)((const char *)d->ops + i * stride);
        if (e->fn && !code_ok(map, (const void *)e->fn))
            return fail(why, size, "kernel of op table entry %zu (op %u: %s) is not code of the plugin", i,
                        (unsigned)e->op, rayo_op_by_id(e->op) ? rayo_op_by_id(e->op)->name : "unknown");
    }
    return true;
}

bool plugin_descriptor_ok(const plugin_map *map, const rayo_plugin_descriptor *d, size_t sym_size,
                          char *why, size_t size)
{
    if (d->magic != RAYO_PLUGIN_MAGIC)
        return fail(why, size, "bad descriptor magic 0x%08x: not a rayo plugin", (unsigned)d->magic);
    if (d->abi_major != RAYO_PLUGIN_ABI_MAJOR)
        return fail(why, size, "built for plugin ABI %u.%u, this core speaks ABI %d: rebuild the plugin for ABI %d",
                    d->abi_major, d->abi_minor, RAYO_PLUGIN_ABI_MAJOR, RAYO_PLUGIN_ABI_MAJOR);
    if (d->struct_size < DESCRIPTOR_V1_0_SIZE)
        return fail(why, size, "descriptor too small (%u bytes, need %zu)", (unsigned)d->struct_size,
                    (size_t)DESCRIPTOR_V1_0_SIZE);
    if (d->struct_size > sym_size)
        return fail(why, size, "descriptor says %u bytes, its symbol has %zu", (unsigned)d->struct_size, sym_size);
    if (!code_ok(map, (const void *)d->probe) || !code_ok(map, (const void *)d->init) ||
        (d->fini && !code_ok(map, (const void *)d->fini)))
        return fail(why, size, "descriptor's probe, init or fini is %s",
                    !d->probe || !d->init ? "NULL" : "not code of the plugin");
    if (d->struct_size >= DESCRIPTOR_V1_2_SIZE && d->release_constant && !code_ok(map, (const void *)d->release_constant))
        return fail(why, size, "descriptor's release_constant is not code of the plugin");
    return ops_ok(map, d, why, size) && (!d->memory || memory_api_ok(map, d->memory, why, size));
}
