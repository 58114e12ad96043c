/* SPDX-License-Identifier: MIT */
/* config.c - the layered INI configuration (see conf/rayo.conf).
 *
 * Every setting is kept as an entry with its origin; a lookup takes the last
 * entry for (section, key), so "later layers win" is just append order. */
#define _GNU_SOURCE
#include "internal.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef RAYO_INI_MIN /* builds without inih (wasm): the same stream interface */
#include "ini-min.h"
#else
#include <ini.h>
#endif
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#ifndef RAYO_VENDORCONFDIR
#define RAYO_VENDORCONFDIR "/usr/share/rayo/conf.d"
#endif

/* ---- lists ---- */
/* Calls fn for each trimmed, non-empty item of `list`, items separated by
 * any character of `seps`. */
static void each_item(const char *list, const char *seps, void (*fn)(void *u, const char *item), void *u)
{
    if (!list)
        return;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, seps);
        const char *end = p[len] ? p + len : NULL;
        while (len && isspace((unsigned char)*p)) { p++; len--; }
        while (len && isspace((unsigned char)p[len - 1])) len--;
        if (len) {
            char *item = strndup(p, len); /* no length limit: a cut path is another path */
            if (item)
                fn(u, item);
            free(item);
        }
        if (!end)
            break;
        p = end + 1;
    }
}

void list_each(const char *list, char sep, void (*fn)(void *u, const char *item), void *u)
{
    const char seps[2] = {sep, '\0'};
    each_item(list, seps, fn, u);
}

/* Backend names never hold a space: "avx2 avx512" is two names, as is
 * "avx2, avx512" (rayo.conf(5)). */
void list_each_name(const char *list, void (*fn)(void *u, const char *item), void *u)
{
    each_item(list, ", \t", fn, u);
}

struct contains_acc { const char *name; bool found; };

static void check_item(void *u, const char *item)
{
    struct contains_acc *acc = u;
    if (strcmp(item, acc->name) == 0)
        acc->found = true;
}

bool list_contains(const char *list, const char *name)
{
    struct contains_acc acc = {name, false};
    list_each_name(list, check_item, &acc);
    return acc.found;
}

bool config_bool(const char *v, bool dflt)
{
    if (!v)
        return dflt;
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcmp(v, "1"))
        return true;
    if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") || !strcmp(v, "0"))
        return false;
    return dflt;
}

static const char *origin_or(const rayo_config *cfg, const char *section, const char *key)
{
    const char *o = config_origin(cfg, section, key);
    return o ? o : "settings";
}

bool config_get_bool(const rayo_context *ctx, const char *section, const char *key, bool dflt)
{
    const char *v = config_get(&ctx->cfg, section, key);
    if (!v)
        return dflt;
    bool yes = config_bool(v, true), no = !config_bool(v, false);
    if (yes == no) { /* neither yes nor no */
        core_log(ctx, RAYO_LOG_WARN, "%s: [%s] %s = \"%s\" is not yes/no, true/false, on/off or 1/0: using %s",
                 origin_or(&ctx->cfg, section, key), section, key, v, dflt ? "yes" : "no");
        return dflt;
    }
    return yes;
}

size_t config_get_size(const rayo_context *ctx, const char *section, const char *key, size_t dflt)
{
    const char *v = config_get(&ctx->cfg, section, key);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    const char *problem = NULL;
    if (end == v || *end || !isdigit((unsigned char)v[0]))
        problem = "is not a size (digits only)";
    else if (errno == ERANGE || n > SIZE_MAX)
        problem = "is too large";
    if (problem) {
        core_log(ctx, RAYO_LOG_WARN, "%s: [%s] %s = \"%s\" %s: using %zu", origin_or(&ctx->cfg, section, key),
                 section, key, v, problem, dflt);
        return dflt;
    }
    return (size_t)n;
}

const char *file_type_name(unsigned mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return S_ISREG(mode) ? "a regular file" : "not a regular file";
}

/* ---- entries ---- */
static void config_set(rayo_config *cfg, const char *section, const char *key,
                       const char *value, const char *origin)
{
    if (cfg->count == cfg->cap) {
        size_t cap = cfg->cap ? cfg->cap * 2 : 32;
        config_entry *e = realloc(cfg->entries, cap * sizeof *e);
        if (!e)
            return; /* out of memory: the setting is lost, defaults apply */
        cfg->entries = e;
        cfg->cap = cap;
    }
    config_entry *e = &cfg->entries[cfg->count];
    e->section = rayo__strdup(section);
    e->key = rayo__strdup(key);
    e->value = rayo__strdup(value);
    e->origin = rayo__strdup(origin);
    if (!e->section || !e->key || !e->value || !e->origin) {
        free(e->section); free(e->key); free(e->value); free(e->origin);
        return;
    }
    cfg->count++;
}

const config_entry *config_lookup(const rayo_config *cfg, const char *section, const char *key)
{
    for (size_t i = cfg->count; i-- > 0;)
        if (!strcmp(cfg->entries[i].section, section) && !strcmp(cfg->entries[i].key, key))
            return &cfg->entries[i];
    return NULL;
}

const char *config_get(const rayo_config *cfg, const char *section, const char *key)
{
    const config_entry *e = config_lookup(cfg, section, key);
    return e ? e->value : NULL;
}

const char *config_origin(const rayo_config *cfg, const char *section, const char *key)
{
    const config_entry *e = config_lookup(cfg, section, key);
    return e ? e->origin : NULL;
}

static void config_add_file(rayo_config *cfg, const char *path, const char *status)
{
    if (cfg->file_count == cfg->file_cap) {
        size_t cap = cfg->file_cap ? cfg->file_cap * 2 : 8;
        config_file *f = realloc(cfg->files, cap * sizeof *f);
        if (!f)
            return;
        cfg->files = f;
        cfg->file_cap = cap;
    }
    config_file *f = &cfg->files[cfg->file_count++];
    memset(f, 0, sizeof *f);
    f->path = rayo__strdup(path);
    f->status = rayo__strdup(status);
}

const char *config_file_status(const config_file *f)
{
    return f->problems ? f->counted : f->status;
}

/* Does msg begin with "PATH:LINE"? */
static bool names_file_line(const char *msg, const char *path)
{
    size_t len = path ? strlen(path) : 0;
    return len && !strncmp(msg, path, len) && msg[len] == ':' && isdigit((unsigned char)msg[len + 1]);
}

void config_count_problem(rayo_config *cfg, const char *msg)
{
    for (size_t i = cfg->file_count; i-- > 0;) {
        config_file *f = &cfg->files[i];
        if (!names_file_line(msg, f->path))
            continue;
        f->problems++;
        snprintf(f->counted, sizeof f->counted, "read, %d problem%s (see warnings)", f->problems,
                 f->problems == 1 ? "" : "s");
        return;
    }
}

void config_free(rayo_config *cfg)
{
    for (size_t i = 0; i < cfg->count; i++) {
        free(cfg->entries[i].section);
        free(cfg->entries[i].key);
        free(cfg->entries[i].value);
        free(cfg->entries[i].origin);
    }
    for (size_t i = 0; i < cfg->file_count; i++) {
        free(cfg->files[i].path);
        free(cfg->files[i].status);
    }
    free(cfg->entries);
    free(cfg->files);
    memset(cfg, 0, sizeof *cfg);
}

/* ---- which keys exist ---- */
static const char *const rayo_keys[] = {"log", "threads", "lazy_init", NULL};
static const char *const plugins_keys[] = {"path", "load", "allow", "deny", NULL};
static const char *const dispatch_keys[] = {"order", "offload_threshold", "force_cpu", NULL};
static const char *const op_keys[] = {"order", "offload_threshold", "precision", NULL};
static const char *const op_combo_keys[] = {"order", "precision", NULL}; /* [op.NAME.COMBO] */

/* offload_threshold.BACKEND: the threshold for one backend (a backend's
 * name: letters, digits, '_' and '-'). */
static bool is_backend_threshold(const char *key)
{
    static const char prefix[] = "offload_threshold.";
    if (strncmp(key, prefix, sizeof prefix - 1) || !key[sizeof prefix - 1])
        return false;
    for (const char *p = key + sizeof prefix - 1; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return false;
    return true;
}

static bool in_keys(const char *const *keys, const char *key)
{
    for (; *keys; keys++)
        if (!strcmp(*keys, key))
            return true;
    return false;
}

/* [op.NAME] or [op.NAME.COMBO], COMBO a dtype combination as rayo-info
 * names it (f32.q4_k.f32): NULL if the key is known there, else why not. */
static const char *op_key_reason(const char *name, const char *key)
{
    const char *dot = strchr(name, '.');
    char op_name[64];
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    if (len >= sizeof op_name)
        return "unknown op in section name";
    memcpy(op_name, name, len);
    op_name[len] = '\0';
    const rayo_op_info *op = rayo_op_by_name(op_name);
    if (!op)
        return "unknown op in section name";
    if (!dot)
        return in_keys(op_keys, key) || is_backend_threshold(key) ? NULL : "unknown key in an [op.NAME] section";
    size_t i = 0, count = rayo_op_combo_count(op->id);
    while (i < count && strcmp(rayo_op_combo(op->id, i)->name, dot + 1))
        i++;
    if (i == count)
        return "unknown dtype combination in section name (rayo-info lists them)";
    return in_keys(op_combo_keys, key) ? NULL : "unknown key in an [op.NAME.COMBO] section";
}

/* NULL if the key is known, else why it is not. */
static const char *unknown_key_reason(const char *section, const char *key)
{
    if (!strcmp(section, "rayo"))
        return in_keys(rayo_keys, key) ? NULL : "unknown key in [rayo]";
    if (!strcmp(section, "plugins"))
        return in_keys(plugins_keys, key) ? NULL : "unknown key in [plugins]";
    if (!strcmp(section, "dispatch"))
        return in_keys(dispatch_keys, key) || is_backend_threshold(key) ? NULL : "unknown key in [dispatch]";
    if (!strncmp(section, "op.", 3))
        return op_key_reason(section + 3, key);
    if (!strncmp(section, "backend.", 8) && section[8])
        return NULL; /* plugins have keys of their own */
    return "unknown section";
}

/* ---- parsing ---- */
/* Config files larger than this are refused: a real one is a few KiB. */
#define MAX_CONFIG_BYTES (1u << 20)

struct parse_state {
    rayo_context *ctx;
    rayo_config *cfg;
    const char *path;
    FILE *fp;               /* NULL when parsing a string */
    const char *text;       /* the rest of the string being parsed */
    const char *base_dir;   /* relative plugin paths resolve against it; NULL: cwd */
    int line;
    int problems;
};

static void problem(struct parse_state *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct parse_state *ps, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ps->problems++;
    core_log(ps->ctx, RAYO_LOG_WARN, "%s:%d: %s", ps->path, ps->line, msg);
}

static bool line_is_malformed(const char *line)
{
    if (!*line || *line == '#' || *line == ';')
        return false;
    if (*line == '[')
        return strchr(line, ']') == NULL;
    return strchr(line, '=') == NULL && strchr(line, ':') == NULL;
}

/* Reads one raw line into buf; false at the end.  *whole is false when the
 * line did not fit (the rest of it is then skipped: a piece of a line must
 * never be read as a line of its own). */
static bool next_raw_line(struct parse_state *ps, char *buf, int size, bool *whole)
{
    /* A whole line is at most size - 2 characters: room for "\n" and NUL. */
    if (ps->fp) {
        if (!fgets(buf, size, ps->fp))
            return false;
        size_t len = strlen(buf);
        *whole = len < (size_t)size - 1 || buf[len - 1] == '\n';
        if (!*whole) {
            int c;
            while ((c = getc(ps->fp)) != EOF && c != '\n')
                ;
        }
        return true;
    }
    if (!*ps->text)
        return false;
    const char *nl = strchr(ps->text, '\n');
    size_t len = nl ? (size_t)(nl - ps->text) : strlen(ps->text);
    *whole = len <= (size_t)size - 2;
    size_t keep = *whole ? len : (size_t)size - 2;
    memcpy(buf, ps->text, keep);
    buf[keep] = '\0';
    ps->text += len + (nl != NULL);
    return true;
}

/* inih reader: counts lines so that messages can say file:line, and hands
 * inih only lines that mean what they say: whole, trimmed at the left (an
 * indented "key = value" is a setting, not a continuation), without a BOM.
 * Problems are reported here with file:line (inih returns only the first). */
static char *read_line(char *buf, int size, void *stream)
{
    struct parse_state *ps = stream;
    bool whole;
    if (!next_raw_line(ps, buf, size, &whole))
        return NULL;
    ps->line++;
    char *start = buf;
    if (ps->line == 1 && !memcmp(start, "\xEF\xBB\xBF", 3))
        start += 3; /* UTF-8 byte order mark */
    bool indented = isspace((unsigned char)*start) && *start != '\n' && *start != '\r';
    while (isspace((unsigned char)*start))
        start++;
    memmove(buf, start, strlen(start) + 1);
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!whole) {
        problem(ps, "line longer than %d characters ignored (all of it)", size - 2);
        buf[0] = '\0';
    } else if (indented && line_is_malformed(buf)) {
        problem(ps, "indented line ignored: continuation lines are not supported: \"%s\"", buf);
        buf[0] = '\0';
    } else if (line_is_malformed(buf)) {
        problem(ps, "malformed line ignored: \"%s\"", buf);
        buf[0] = '\0';
    }
    strcat(buf, "\n");
    return buf;
}

/* A relative plugin path means: relative to the file that names it (or to
 * the current directory for settings that come from no file).  Never a
 * library search: the loader gets absolute paths only. */
struct resolve_acc { const char *base; char *out; bool failed; };

static void resolve_item(void *u, const char *item)
{
    struct resolve_acc *acc = u;
    char *cwd = NULL;
    const char *base = acc->base;
    if (item[0] != '/' && !base)
        base = cwd = getcwd(NULL, 0);
    char *joined = NULL;
    if (item[0] == '/')
        joined = rayo__asprintf("%s%s%s", acc->out ? acc->out : "", acc->out ? ":" : "", item);
    else if (base)
        joined = rayo__asprintf("%s%s%s/%s", acc->out ? acc->out : "", acc->out ? ":" : "", base, item);
    free(cwd);
    if (!joined) {
        acc->failed = true;
        return;
    }
    free(acc->out);
    acc->out = joined;
}

static char *resolve_paths(const char *list, const char *base)
{
    struct resolve_acc acc = {base, NULL, false};
    list_each(list, ':', resolve_item, &acc);
    if (acc.failed) {
        free(acc.out);
        return NULL;
    }
    return acc.out ? acc.out : rayo__strdup("");
}

static bool is_path_key(const char *section, const char *key)
{
    return !strcmp(section, "plugins") && (!strcmp(key, "path") || !strcmp(key, "load"));
}

struct exists_acc { struct parse_state *ps; const char *key; const char *raw; };

/* A folder of [plugins] path or a file of [plugins] load that is not there
 * is a mistake worth a warning (the setting is kept: it may appear later). */
static void check_exists(void *u, const char *item)
{
    struct exists_acc *acc = u;
    bool want_dir = !strcmp(acc->key, "path");
    struct stat st;
    const char *why = NULL;
    if (stat(item, &st) != 0)
        why = strerror(errno);
    else if (want_dir && !S_ISDIR(st.st_mode))
        why = "not a directory";
    if (!why)
        return;
    if (strstr(acc->raw, item)) /* as written: an absolute path */
        problem(acc->ps, "[plugins] %s: %s: %s", acc->key, item, why);
    else
        problem(acc->ps, "[plugins] %s: %s: %s (a relative path is relative to %s)", acc->key, item, why,
                acc->ps->base_dir ? "the folder of the file that names it" : "the current directory");
}

static int on_setting(void *user, const char *section, const char *key, const char *value)
{
    struct parse_state *ps = user;
    if (!key)
        return 1; /* a section header alone */
    char origin[512];
    snprintf(origin, sizeof origin, "%s:%d", ps->path, ps->line);
    if (!*section) {
        problem(ps, "key \"%s\" outside any section ignored", key);
        return 1;
    }
    const char *why = unknown_key_reason(section, key);
    if (why) {
        problem(ps, "%s: [%s] %s (ignored)", why, section, key);
        return 1;
    }
    if (is_path_key(section, key)) {
        char *resolved = resolve_paths(value, ps->base_dir);
        if (!resolved)
            problem(ps, "[%s] %s: cannot resolve relative paths (ignored)", section, key);
        else
            config_set(ps->cfg, section, key, resolved, origin);
        struct exists_acc acc = {ps, key, value};
        list_each(resolved, ':', check_exists, &acc);
        free(resolved);
        return 1;
    }
    config_set(ps->cfg, section, key, value, origin);
    return 1;
}

int config_parse_stream(rayo_context *ctx, rayo_config *cfg, const char *name, FILE *fp, const char *base_dir)
{
    struct parse_state ps = {ctx, cfg, name, fp, NULL, base_dir, 0, 0};
    ini_parse_stream(read_line, &ps, on_setting, &ps);
    return ps.problems;
}

int config_parse_string(rayo_context *ctx, rayo_config *cfg, const char *name, const char *text)
{
    struct parse_state ps = {ctx, cfg, name, NULL, text, NULL, 0, 0};
    ini_parse_stream(read_line, &ps, on_setting, &ps);
    return ps.problems;
}

/* A config file, opened without blocking (a FIFO would wait for a writer)
 * and refused unless it is a regular file of sane size (/dev/zero never
 * ends).  NULL with *status set when refused. */
static FILE *open_config(rayo_context *ctx, const char *path, bool report_missing, const char **status)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (report_missing || errno != ENOENT)
            core_log(ctx, RAYO_LOG_WARN, "%s: cannot open config file: %s", path, strerror(errno));
        *status = errno == ENOENT ? "not found" : "cannot be opened";
        return NULL;
    }
    struct stat st;
    static _Thread_local char why[64];
    *status = NULL;
    if (fstat(fd, &st) != 0)
        *status = "cannot be read";
    else if (!S_ISREG(st.st_mode))
        *status = (snprintf(why, sizeof why, "refused: %s, not a file", file_type_name(st.st_mode)), why);
    else if (st.st_size > (off_t)MAX_CONFIG_BYTES)
        *status = "refused: larger than 1 MiB";
    FILE *fp = *status ? NULL : fdopen(fd, "r");
    if (!fp) {
        if (!*status)
            *status = "cannot be read";
        core_log(ctx, RAYO_LOG_WARN, "%s: config file %s", path, *status);
        close(fd);
    }
    return fp;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return getcwd(NULL, 0);
    if (path[0] != '/') { /* relative: make it absolute now */
        char *cwd = getcwd(NULL, 0);
        char *dir = cwd ? rayo__asprintf("%s/%.*s", cwd, (int)(slash - path), path) : NULL;
        free(cwd);
        return dir;
    }
    return slash == path ? rayo__strdup("/") : strndup(path, (size_t)(slash - path));
}

/* The file is listed before it is read: the warnings about it are counted
 * against it as they are said (config_count_problem). */
static void parse_file(rayo_context *ctx, rayo_config *cfg, const char *path, bool report_missing)
{
    const char *refused;
    FILE *fp = open_config(ctx, path, report_missing, &refused);
    config_add_file(cfg, path, fp ? "read" : refused);
    core_log(ctx, RAYO_LOG_DEBUG, "config file %s: %s", path, fp ? "reading" : refused);
    if (!fp)
        return;
    char *dir = dir_of(path);
    config_parse_stream(ctx, cfg, path, fp, dir);
    free(dir);
    fclose(fp);
}

static void parse_string(rayo_context *ctx, rayo_config *cfg, const char *name, const char *text)
{
    config_add_file(cfg, name, "read");
    config_parse_string(ctx, cfg, name, text);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_conf_name(const char *name)
{
    size_t len = strlen(name);
    return name[0] != '.' && len > 5 && !strcmp(name + len - 5, ".conf");
}

/* A file of the same name in the administrator's conf.d masks a vendor
 * drop-in (as in systemd and the Vulkan loader): NULL if none does. */
static char *masking_file(const char *mask_dir, const char *name)
{
    struct stat st;
    char *path = mask_dir ? rayo__asprintf("%s/%s", mask_dir, name) : NULL;
    if (path && lstat(path, &st) == 0)
        return path;
    free(path);
    return NULL;
}

/* conf.d: every *.conf file, in lexical order, except those masked by a
 * file of the same name in mask_dir (NULL: none masked). */
static void parse_dir(rayo_context *ctx, rayo_config *cfg, const char *dir, const char *mask_dir)
{
    DIR *d = opendir(dir);
    char *pattern = rayo__asprintf("%s/*.conf", dir);
    core_log(ctx, RAYO_LOG_DEBUG, "config folder %s: %s", dir, d ? "reading *.conf" : "no such directory");
    if (!d) {
        if (pattern)
            config_add_file(cfg, pattern, "no such directory");
        free(pattern);
        return;
    }
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256)
        if (is_conf_name(de->d_name) && (names[n] = rayo__strdup(de->d_name)))
            n++;
    closedir(d);
    if (n == 0 && pattern)
        config_add_file(cfg, pattern, "no files"); /* so rayo-info shows where drop-ins go */
    free(pattern);
    qsort(names, n, sizeof names[0], compare_names);
    for (size_t i = 0; i < n; i++) {
        char *path = rayo__asprintf("%s/%s", dir, names[i]);
        char *mask = masking_file(mask_dir, names[i]);
        char *status = mask ? rayo__asprintf("masked by %s", mask) : NULL;
        if (path && status)
            config_add_file(cfg, path, status);
        else if (path)
            parse_file(ctx, cfg, path, false);
        free(status);
        free(mask);
        free(path);
        free(names[i]);
    }
}

/* The user's rayo.conf, then the user's conf.d (where rayo-calibrate
 * writes by default). */
static void load_user_files(rayo_context *ctx, rayo_config *cfg)
{
    const char *xdg = secure_getenv("XDG_CONFIG_HOME");
    const char *home = secure_getenv("HOME");
    char *dir = NULL;
    if (xdg && *xdg)
        dir = rayo__asprintf("%s/rayo", xdg);
    else if (home && *home)
        dir = rayo__asprintf("%s/.config/rayo", home);
    char *path = dir ? rayo__asprintf("%s/rayo.conf", dir) : NULL;
    char *drop_ins = dir ? rayo__asprintf("%s/conf.d", dir) : NULL;
    if (path)
        parse_file(ctx, cfg, path, false);
    if (drop_ins)
        parse_dir(ctx, cfg, drop_ins, NULL);
    free(drop_ins);
    free(path);
    free(dir);
}

/* Environment variables, as one more layer. */
static void load_environment(rayo_context *ctx, rayo_config *cfg)
{
    static const struct { const char *var, *section, *key; } vars[] = {
        {"RAYO_BACKEND", "dispatch", "order"},
        {"RAYO_PLUGIN_PATH", "plugins", "env_path"},
        {"RAYO_FORCE_CPU", "dispatch", "force_cpu"},
        {"RAYO_LOG", "rayo", "log"},
        {"RAYO_THREADS", "rayo", "threads"},
        {"RAYO_CPU_DISABLE", "rayo", "cpu_disable"},
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = rayo__env(ctx, vars[i].var);
        if (v) {
            char origin[64];
            snprintf(origin, sizeof origin, "env %s", vars[i].var);
            /* Relative entries of RAYO_PLUGIN_PATH: against the current
             * directory, like PATH; made absolute now. */
            char *resolved = !strcmp(vars[i].key, "env_path") ? resolve_paths(v, NULL) : NULL;
            config_set(cfg, vars[i].section, vars[i].key, resolved ? resolved : v, origin);
            free(resolved);
        }
    }
    /* RAYO_DISABLE adds to the deny list instead of replacing it. */
    const char *disable = rayo__env(ctx, "RAYO_DISABLE");
    if (disable) {
        const char *deny = config_get(cfg, "plugins", "deny");
        char *joined = rayo__asprintf("%s%s%s", deny ? deny : "", deny ? "," : "", disable);
        if (joined)
            config_set(cfg, "plugins", "deny", joined, "env RAYO_DISABLE");
        free(joined);
    }
}

/* The packages' drop-in directory: rayo_options.vendor_conf_dir when the
 * caller's struct has it and sets it, else $datadir/rayo/conf.d. */
static const char *vendor_conf_dir(const rayo_options *opts)
{
    if (opts && opts->struct_size >= offsetof(rayo_options, vendor_conf_dir) + sizeof(char *) &&
        opts->vendor_conf_dir)
        return opts->vendor_conf_dir;
    return RAYO_VENDORCONFDIR;
}

/* Files first (packages' drop-ins, then the administrator's, then the
 * user's), then RAYO_CONFIG, the environment and the application. */
void config_load(rayo_context *ctx, rayo_config *cfg, const rayo_options *opts)
{
    const char *sysconf = opts && opts->sysconf_dir ? opts->sysconf_dir : RAYO_SYSCONFDIR;
#ifdef __EMSCRIPTEN__
    /* No config files in the WebAssembly build (under node they would be the
     * host's files): settings come only through rayo_options.settings. */
    const bool read_files = false;
#else
    const bool read_files = !(opts && opts->no_config_files);
#endif
    if (read_files) {
        char *main_file = rayo__asprintf("%s/rayo.conf", sysconf);
        char *dir = rayo__asprintf("%s/conf.d", sysconf);
        if (dir)
            parse_dir(ctx, cfg, vendor_conf_dir(opts), dir);
        if (main_file)
            parse_file(ctx, cfg, main_file, false);
        if (dir)
            parse_dir(ctx, cfg, dir, NULL);
        free(main_file);
        free(dir);
        load_user_files(ctx, cfg);
    }
#ifndef __EMSCRIPTEN__
    const char *explicit_file = rayo__env(ctx, "RAYO_CONFIG");
    if (explicit_file && *explicit_file)
        parse_file(ctx, cfg, explicit_file, true);
#endif
    load_environment(ctx, cfg);
    if (opts && opts->settings)
        parse_string(ctx, cfg, "<application settings>", opts->settings);
}
