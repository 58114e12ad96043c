/* SPDX-License-Identifier: MIT */
/* config-check.c - the checks of settings that need the loader's answer:
 * backend names (in any order, plugins.allow, plugins.deny, RAYO_BACKEND,
 * [backend.NAME] sections) and the keys of a plugin's section.
 *
 * A name is known when a plugin file of that name was found (loaded or not)
 * or when it is one of the backends this source tree has (a package not
 * installed is no mistake).  Each problem is said once, at warn level, with
 * where it was set and, where one is close, the name that was probably meant. */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

#ifndef RAYO_KNOWN_BACKENDS
#define RAYO_KNOWN_BACKENDS ""
#endif

/* Keys of [backend.NAME] that the core reads itself. */
static const char *const core_backend_keys[] = {"enabled", "device", NULL};

/* Levenshtein distance, for names of a few characters. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

typedef struct name_match {
    const char *want;
    bool found;
    char close[32];     /* the closest known name, if close enough */
    size_t distance;
} name_match;

static void consider(name_match *m, const char *known)
{
    if (!strcmp(known, m->want)) {
        m->found = true;
        return;
    }
    size_t d = edit_distance(m->want, known);
    /* Close: a typo or two, never most of the name. */
    if (d < m->distance && d <= 2 && d < strlen(known)) {
        m->distance = d;
        snprintf(m->close, sizeof m->close, "%s", known);
    }
}

static void consider_item(void *u, const char *known)
{
    consider(u, known);
}

static name_match match_backend(const rayo_context *ctx, const char *name)
{
    name_match m = {name, false, "", SIZE_MAX};
    for (size_t i = 0; i < ctx->backend_count; i++)
        consider(&m, ctx->backends[i]->name);
    list_each_name(RAYO_KNOWN_BACKENDS, consider_item, &m);
    return m;
}

/* " (did you mean cuda?)" or "". */
static const char *suggestion(const name_match *m, char *buf, size_t size)
{
    if (!m->close[0])
        return "";
    snprintf(buf, size, " (did you mean %s?)", m->close);
    return buf;
}

struct names_acc { rayo_context *ctx; const config_entry *e; };

static void check_name(void *u, const char *name)
{
    struct names_acc *acc = u;
    name_match m = match_backend(acc->ctx, name);
    rayo_backend *be = backend_by_name(acc->ctx, name);
    if (be && !strcmp(acc->e->key, "order"))
        be->named_in_order = true; /* a software device started late still takes its calls */
    char hint[64];
    if (!m.found)
        core_log(acc->ctx, RAYO_LOG_WARN, "%s: [%s] %s: no backend is called \"%s\"%s", acc->e->origin,
                 acc->e->section, acc->e->key, name, suggestion(&m, hint, sizeof hint));
    else if (!strcmp(acc->e->key, "order") && (!be || !backend_active(be)))
        core_log(acc->ctx, RAYO_LOG_INFO, "%s: [%s] %s names backend \"%s\", which is not loaded", acc->e->origin,
                 acc->e->section, acc->e->key, name);
}

static bool lists_backends(const config_entry *e)
{
    return !strcmp(e->key, "order") ||
           (!strcmp(e->section, "plugins") && (!strcmp(e->key, "allow") || !strcmp(e->key, "deny")));
}

/* [backend.NAME]: said once per section, at its first setting. */
static void check_section(rayo_context *ctx, size_t index)
{
    const config_entry *e = &ctx->cfg.entries[index];
    for (size_t i = 0; i < index; i++)
        if (!strcmp(ctx->cfg.entries[i].section, e->section))
            return;
    name_match m = match_backend(ctx, e->section + 8);
    char hint[64];
    if (!m.found)
        core_log(ctx, RAYO_LOG_WARN, "%s: [%s]: no backend is called \"%s\"%s", e->origin, e->section,
                 e->section + 8, suggestion(&m, hint, sizeof hint));
}

void config_check_names(rayo_context *ctx)
{
    for (size_t i = 0; i < ctx->cfg.count; i++) {
        const config_entry *e = &ctx->cfg.entries[i];
        if (lists_backends(e)) {
            struct names_acc acc = {ctx, e};
            list_each_name(e->value, check_name, &acc);
        } else if (!strncmp(e->section, "backend.", 8)) {
            check_section(ctx, i);
        }
    }
}

/* ---- the keys a plugin reads ---- */
static bool key_was_read(const rayo_backend *be, const char *key)
{
    for (const char *const *k = core_backend_keys; *k; k++)
        if (!strcmp(*k, key))
            return true;
    for (size_t i = 0; i < be->keys_read_count; i++)
        if (!strcmp(be->keys_read[i], key))
            return true;
    return false;
}

void backend_note_key(rayo_backend *be, const char *key)
{
    pthread_mutex_lock(&be->keys_lock);
    if (!key_was_read(be, key) && be->keys_read_count < BACKEND_KEYS_MAX) {
        char *copy = rayo__strdup(key);
        if (copy)
            be->keys_read[be->keys_read_count++] = copy;
    }
    pthread_mutex_unlock(&be->keys_lock);
}

void backend_check_keys(rayo_backend *be)
{
    char section[64];
    snprintf(section, sizeof section, "backend.%s", be->name);
    const rayo_config *cfg = &be->ctx->cfg;
    pthread_mutex_lock(&be->keys_lock);
    for (size_t i = 0; i < cfg->count; i++) {
        const config_entry *e = &cfg->entries[i];
        if (!strcmp(e->section, section) && !key_was_read(be, e->key))
            core_log(be->ctx, RAYO_LOG_WARN, "%s: [%s] %s: the %s plugin does not know this key (ignored)",
                     e->origin, section, e->key, be->name);
    }
    pthread_mutex_unlock(&be->keys_lock);
}

void backend_free_keys(rayo_backend *be)
{
    for (size_t i = 0; i < be->keys_read_count; i++)
        free(be->keys_read[i]);
    be->keys_read_count = 0;
}
