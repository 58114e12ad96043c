/* SPDX-License-Identifier: MIT */
/* fuzz-plugin.c - libFuzzer target: the plugin checks that trust nothing
 * (plugin-check.c) on any bytes.  The bytes are checked as the head of an
 * ELF file, and copied to a fixed address as a fake plugin image whose
 * first half is its data segment and second half its code segment, with
 * the descriptor at the start: pointers in the input that aim into that
 * image are followed, any other must be refused without being read.
 * FUZZ_WRITE_SEEDS=DIR writes descriptor seeds (good and lying) there. */
#define _GNU_SOURCE
#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define IMAGE_BASE ((uintptr_t)0x500000000000ull) /* application memory under ASan */
#define IMAGE_SIZE ((size_t)65536)
#define CODE ((uintptr_t)(IMAGE_BASE + IMAGE_SIZE / 2))

static unsigned char *image;

static void write_seed(const char *dir, const char *name, const void *bytes, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(bytes, 1, size, f);
        fclose(f);
    }
}

/* A descriptor with its op table and memory API right after it. */
struct seed {
    rayo_plugin_descriptor d;
    rayo_op_entry ops[2];
    rayo_memory_api mem;
};

static void write_seeds(const char *dir)
{
    struct seed s;
    memset(&s, 0, sizeof s);
    s.d.magic = RAYO_PLUGIN_MAGIC;
    s.d.abi_major = RAYO_PLUGIN_ABI_MAJOR;
    s.d.struct_size = sizeof s.d;
    strcpy(s.d.name, "seed");
    s.d.probe = (void *)CODE;
    s.d.init = (void *)(CODE + 16);
    s.d.ops = (void *)(IMAGE_BASE + offsetof(struct seed, ops));
    s.d.op_count = 2;
    s.ops[0] = (rayo_op_entry){RAYO_OP_ADD, 0, (rayo_kernel_fn)(CODE + 32)};
    s.ops[1] = (rayo_op_entry){RAYO_OP_MUL, 0, (rayo_kernel_fn)(CODE + 48)};
    write_seed(dir, "good", &s, sizeof s);
    struct seed bad = s;
    bad.d.ops = (void *)0x10;
    write_seed(dir, "ops-0x10", &bad, sizeof bad);
    bad = s;
    bad.d.op_count = 100000;
    write_seed(dir, "op-count-100000", &bad, sizeof bad);
    bad = s;
    bad.d.memory = (void *)(IMAGE_BASE + offsetof(struct seed, mem));
    bad.mem.struct_size = sizeof bad.mem;
    bad.mem.buffer_alloc = (void *)(CODE + 64);
    write_seed(dir, "memory-nulls", &bad, sizeof bad);
    bad.mem.struct_size = 0;
    write_seed(dir, "memory-size-0", &bad, sizeof bad);
    write_seed(dir, "8-bytes", &s, 8);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    const char *dir = getenv("FUZZ_WRITE_SEEDS");
    if (dir) {
        write_seeds(dir);
        exit(0);
    }
    image = mmap((void *)IMAGE_BASE, IMAGE_SIZE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (image != (void *)IMAGE_BASE) {
        fprintf(stderr, "fuzz-plugin: cannot map the image at %p\n", (void *)IMAGE_BASE);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[256];
    (void)plugin_elf_ok(data, size, size, why, sizeof why);
    (void)plugin_elf_ok(data, size, size / 2, why, sizeof why);

    size_t data_bytes = size < IMAGE_SIZE / 2 ? size : IMAGE_SIZE / 2;
    memset(image, 0, IMAGE_SIZE);
    memcpy(image, data, data_bytes);
    plugin_map map = {{{IMAGE_BASE, CODE, false}, {CODE, IMAGE_BASE + IMAGE_SIZE, true}}, 2};
    const rayo_plugin_descriptor *d = (const void *)image;
    if (plugin_symbol_ok(&map, d, data_bytes, why, sizeof why))
        (void)plugin_descriptor_ok(&map, d, data_bytes, why, sizeof why);
    return 0;
}
