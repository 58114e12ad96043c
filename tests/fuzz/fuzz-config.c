/* SPDX-License-Identifier: MIT */
/* fuzz-config.c - libFuzzer target: the config parser on any bytes, read as
 * a file (the reader of config files) and as a settings string, then the
 * typed lookups.  Built and run by tests/fuzz/run.sh. */
#define _GNU_SOURCE
#include "internal.h"
#include <stdlib.h>
#include <string.h>

static void quiet(void *user, rayo_log_level level, const char *msg)
{
    (void)user; (void)level; (void)msg;
}

static void lookups(rayo_context *ctx)
{
    (void)config_get_size(ctx, "dispatch", "offload_threshold", 1);
    (void)config_get_bool(ctx, "dispatch", "force_cpu", false);
    (void)list_contains(config_get(&ctx->cfg, "plugins", "allow"), "scalar");
    (void)config_origin(&ctx->cfg, "plugins", "load");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rayo_context *ctx = calloc(1, sizeof *ctx);
    char *text = malloc(size + 1);
    if (!ctx || !text) {
        free(ctx);
        free(text);
        return 0;
    }
    ctx->log_level = RAYO_LOG_DEBUG; /* format every message */
    ctx->log_fn = quiet;
    memcpy(text, data, size);
    text[size] = '\0';
    FILE *fp = size ? fmemopen(text, size, "r") : NULL;
    if (fp) {
        config_parse_stream(ctx, &ctx->cfg, "fuzz.conf", fp, "/fuzz");
        fclose(fp);
    }
    config_parse_string(ctx, &ctx->cfg, "<fuzz settings>", text);
    lookups(ctx);
    config_free(&ctx->cfg);
    free(text);
    free(ctx);
    return 0;
}
