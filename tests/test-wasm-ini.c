/* SPDX-License-Identifier: MIT */
/* test-wasm-ini.c - core/ini-min.c, the INI parser of the WebAssembly build,
 * against inih itself: every input is parsed by both through the same
 * ini_parse_stream interface and the callback sequences and the returned
 * first error line must be the same.  Native: runs in every `make check`.
 *
 * The inputs are hand-written cases (sections, both separators, comments,
 * inline comments, continuation lines, a BOM, errors) and fresh random
 * lines built from INI-ish fragments.
 */
#include "config.h"

#define ini_parse_stream ini_min_parse_stream
#include "../core/ini-min.c"
#undef ini_parse_stream
#undef INI_MAX_LINE
#include <ini.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a string as a line stream (what config.c does for settings) ------- */
typedef struct stream {
    const char *rest;
} stream;

static char *read_line(char *buf, int size, void *user)
{
    stream *s = user;
    if (!*s->rest)
        return NULL;
    const char *nl = strchr(s->rest, '\n');
    size_t len = nl ? (size_t)(nl - s->rest) + 1 : strlen(s->rest);
    if (len >= (size_t)size)
        len = (size_t)size - 1;
    memcpy(buf, s->rest, len);
    buf[len] = '\0';
    s->rest += len;
    return buf;
}

/* ---- the callbacks, recorded as text -------------------------------------- */
typedef struct record {
    char text[8192];
    size_t len;
    int refuse_key; /* the handler returns 0 for the key "bad" when set */
} record;

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    record *r = user;
    int w = snprintf(r->text + r->len, sizeof r->text - r->len, "[%s] <%s> = <%s>\n", section,
                     name ? name : "(null)", value ? value : "(null)");
    if (w > 0 && (size_t)w < sizeof r->text - r->len)
        r->len += (size_t)w;
    return !(r->refuse_key && name && !strcmp(name, "bad"));
}

static int failures;

static void compare(const char *label, const char *input, int refuse)
{
    record a = {.refuse_key = refuse}, b = {.refuse_key = refuse};
    stream sa = {input}, sb = {input};
    int ra = ini_min_parse_stream(read_line, &sa, on_pair, &a);
    int rb = ini_parse_stream(read_line, &sb, on_pair, &b);
    if (ra != rb || strcmp(a.text, b.text) != 0) {
        failures++;
        fprintf(stderr, "FAIL %s\ninput:\n%s\nini-min (returns %d):\n%sinih (returns %d):\n%s\n", label,
                input, ra, a.text, rb, b.text);
    }
}

/* ---- cases ----------------------------------------------------------------- */
static const char *const cases[] = {
    "",
    "[dispatch]\norder = wasm, scalar\n",
    "[plugins]\nallow=scalar,wasm\ndeny = vulkan\n[dispatch]\noffload_threshold = 4096\n",
    "  [rayo]  \n  log = debug  \n",
    "[a]\nkey : value with : colon\nk2 = v = w\n",
    "; comment\n# comment\n[s]\nk = v ; inline comment\nk2 = v;not a comment\n",
    "[s]\nk = first\n  continued\n\tmore\nother = x\n",
    "\xEF\xBB\xBF[bom]\nk = v\n",
    "[s]\nno separator here\nk = v\n",
    "[unclosed\nk = v\n",
    "k = outside any section\n[s]\nk = v\n",
    "[s]\nk =\n= v\n",
    "[s]\r\nk = v\r\n",
    "[s]\nbad = x\nk = v\nbad = y\n",
    "[op.matmul]\norder = cuda, avx2\n[backend.vulkan]\nenabled = no\ndevice = 0\n",
    "[s]\nk = v\n[t]\n  indented = after a section\n",
    "[a very long section name that goes on and on past sixty-four characters]\nk = v\n",
    "[s]\na very long key name that goes on and on past sixty-four characters = v\n",
    "[s]\nk = v\n\n\n[s2]\n;k = v\n",
};

/* Random lines from fragments that stress the same paths. */
static const char *const fragments[] = {
    "[s]", "[op.add]", " [x] ", "[", "]", "k", "key", " = ", "=", ":", " : ", "value", " v ",
    ";", " ;c", "#", "\t", "  ", "a;b", "bad", "x=y", "[t] ; c",
};

static void random_input(uint64_t *seed, char *out, size_t size)
{
    size_t used = 0;
    int lines = 1 + (int)(*seed % 8);
    for (int l = 0; l < lines; l++) {
        int parts = 1 + (int)((*seed >> 8) % 5);
        for (int p = 0; p < parts; p++) {
            *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *f = fragments[(*seed >> 33) % (sizeof fragments / sizeof fragments[0])];
            int w = snprintf(out + used, size - used, "%s", f);
            if (w < 0 || (size_t)w >= size - used)
                return;
            used += (size_t)w;
        }
        if (used + 2 < size) {
            out[used++] = '\n';
            out[used] = '\0';
        }
    }
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[32];
        snprintf(label, sizeof label, "case %zu", i);
        compare(label, cases[i], 0);
        compare(label, cases[i], 1);
    }
    uint64_t seed = (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
    printf("random inputs from seed %llu\n", (unsigned long long)seed);
    for (int i = 0; i < 20000; i++) {
        char input[512] = "";
        random_input(&seed, input, sizeof input);
        char label[48];
        snprintf(label, sizeof label, "random input %d", i);
        compare(label, input, i % 2);
        if (failures > 5)
            break;
    }
    if (failures) {
        printf("%d difference(s) between ini-min and inih\n", failures);
        return 1;
    }
    printf("ini-min and inih agree on %zu cases and 20000 random inputs\n",
           sizeof cases / sizeof cases[0]);
    return 0;
}
