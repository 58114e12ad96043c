/* loader.c - finds, checks, probes and initialises backend plugins.
 *
 * Order of trust: nothing of a plugin runs before its data-only descriptor
 * has been checked (magic, ABI major, struct size, architecture, the CPU and
 * OS features it needs).  Every plugin that is not used is kept in the list
 * with the reason, for rayo-info; nothing here aborts the process. */
#define _GNU_SOURCE
#include "internal.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_GETAUXVAL
#include <sys/auxv.h>
#endif

#ifndef RAYO_LOCAL_PLUGINDIR
#define RAYO_LOCAL_PLUGINDIR "" /* none (the WebAssembly build) */
#endif

/* The size of a minor-0 descriptor: the fields this core reads. */
#define DESCRIPTOR_V1_0_SIZE (offsetof(rayo_plugin_descriptor, memory) + sizeof(void *))

bool backend_active(const rayo_backend *be)
{
    return be->status == RAYO_BACKEND_LOADED && !atomic_load(&be->lost);
}

rayo_backend *backend_by_name(const rayo_context *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->backend_count; i++)
        if (!strcmp(ctx->backends[i].name, name) && ctx->backends[i].status != RAYO_BACKEND_SHADOWED)
            return (rayo_backend *)&ctx->backends[i];
    return NULL;
}

static void set_reason(rayo_backend *be, rayo_backend_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(rayo_backend *be, rayo_backend_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(be->reason, sizeof be->reason, fmt, ap);
    va_end(ap);
    be->status = status;
    core_log(be->ctx, RAYO_LOG_INFO, "%s (%s): not used: %s", be->name, be->path, be->reason);
}

/* ---- host services given to plugins ---- */
static rayo_backend *host_backend(const rayo_host *host)
{
    return host->core;
}

static void host_log(const rayo_host *host, int level, const char *fmt, ...)
{
    rayo_backend *be = host_backend(host);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (level < RAYO_LOG_ERROR)
        level = RAYO_LOG_ERROR;
    if (level > RAYO_LOG_DEBUG)
        level = RAYO_LOG_DEBUG;
    core_log(be->ctx, (rayo_log_level)level, "%s: %s", be->name, msg);
}

static void host_set_error(const rayo_host *host, const char *fmt, ...)
{
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    rayo_set_errorv(fmt, ap);
    va_end(ap);
}

static const char *host_config(const rayo_host *host, const char *key)
{
    rayo_backend *be = host_backend(host);
    char section[64];
    snprintf(section, sizeof section, "backend.%s", be->name);
    return config_get(&be->ctx->cfg, section, key);
}

static unsigned host_num_threads(const rayo_host *host)
{
    return pool_threads(host_backend(host)->ctx->pool);
}

static void host_parallel_for(const rayo_host *host, size_t n_tasks,
                              void (*fn)(void *arg, size_t task, unsigned worker), void *arg)
{
    pool_run(host_backend(host)->ctx->pool, n_tasks, fn, arg);
}

static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST)
            return -1;
    }
    return (mkdir(path, 0700) == 0 || errno == EEXIST) ? 0 : -1;
}

static const char *host_cache_dir(const rayo_host *host)
{
    rayo_backend *be = host_backend(host);
    static _Thread_local char dir[1024];
    const char *xdg = secure_getenv("XDG_CACHE_HOME");
    const char *home = secure_getenv("HOME");
    int w;
    if (xdg && *xdg)
        w = snprintf(dir, sizeof dir, "%s/rayo/%s", xdg, be->name);
    else if (home && *home)
        w = snprintf(dir, sizeof dir, "%s/.cache/rayo/%s", home, be->name);
    else
        return NULL;
    if (w < 0 || (size_t)w >= sizeof dir || make_dirs(dir) != 0)
        return NULL;
    return dir;
}

static void init_host(rayo_backend *be)
{
    rayo_host *h = &be->host;
    h->struct_size = sizeof *h;
    h->abi_major = RAYO_PLUGIN_ABI_MAJOR;
    h->abi_minor = RAYO_PLUGIN_ABI_MINOR;
    h->core = be;
    h->cpu_features = be->ctx->cpu_features;
    h->log = host_log;
    h->set_error = host_set_error;
    h->config = host_config;
    h->alloc_aligned = rayo_alloc_aligned;
    h->free_aligned = rayo_free_aligned;
    h->num_threads = host_num_threads;
    h->parallel_for = host_parallel_for;
    h->cache_dir = host_cache_dir;
}

/* ---- checks on the descriptor (no plugin code runs here) ---- */
static bool descriptor_ok(rayo_backend *be, const rayo_plugin_descriptor *d)
{
    if (d->magic != RAYO_PLUGIN_MAGIC) {
        set_reason(be, RAYO_BACKEND_REJECTED, "bad descriptor magic 0x%08x: not a rayo plugin", (unsigned)d->magic);
        return false;
    }
    be->abi_major = d->abi_major;
    be->abi_minor = d->abi_minor;
    if (d->abi_major != RAYO_PLUGIN_ABI_MAJOR) {
        set_reason(be, RAYO_BACKEND_REJECTED,
                   "built for plugin ABI %u.%u, this core speaks ABI %d: rebuild the plugin for ABI %d",
                   d->abi_major, d->abi_minor, RAYO_PLUGIN_ABI_MAJOR, RAYO_PLUGIN_ABI_MAJOR);
        return false;
    }
    if (d->struct_size < DESCRIPTOR_V1_0_SIZE) {
        set_reason(be, RAYO_BACKEND_REJECTED, "descriptor too small (%u bytes, need %zu)",
                   (unsigned)d->struct_size, (size_t)DESCRIPTOR_V1_0_SIZE);
        return false;
    }
    if (memchr(d->name, '\0', sizeof d->name) == NULL || !d->name[0] ||
        memchr(d->version, '\0', sizeof d->version) == NULL) {
        set_reason(be, RAYO_BACKEND_REJECTED, "descriptor name or version not a terminated string");
        return false;
    }
    snprintf(be->name, sizeof be->name, "%s", d->name);
    snprintf(be->version, sizeof be->version, "%s", d->version);
    if (d->arch != RAYO_ARCH_ANY && d->arch != cpu_arch()) {
        set_reason(be, RAYO_BACKEND_REJECTED, "built for %s, this machine is %s",
                   arch_name(d->arch), arch_name(cpu_arch()));
        return false;
    }
    uint64_t missing = d->cpu_features & ~be->ctx->cpu_features;
    if (missing) {
        char names[128];
        set_reason(be, RAYO_BACKEND_REJECTED, "this %s lacks %s, which the plugin was compiled for",
                   cpu_arch() == RAYO_ARCH_WASM32 ? "WebAssembly engine" : "CPU/OS",
                   cpu_feature_names(missing, names, sizeof names));
        return false;
    }
    if (!d->probe || !d->init || (d->op_count && !d->ops)) {
        set_reason(be, RAYO_BACKEND_REJECTED, "descriptor lacks probe, init or its op table");
        return false;
    }
    return true;
}

static bool denied_by_config(rayo_backend *be)
{
    rayo_context *ctx = be->ctx;
    const char *allow = config_get(&ctx->cfg, "plugins", "allow");
    const char *deny = config_get(&ctx->cfg, "plugins", "deny");
    char section[64];
    snprintf(section, sizeof section, "backend.%s", be->name);
    if (deny && list_contains(deny, be->name)) {
        set_reason(be, RAYO_BACKEND_DISABLED, "denied by configuration (plugins.deny / RAYO_DISABLE)");
        return true;
    }
    if (allow && *allow && !list_contains(allow, be->name)) {
        set_reason(be, RAYO_BACKEND_DISABLED, "not in plugins.allow");
        return true;
    }
    if (!config_bool(config_get(&ctx->cfg, section, "enabled"), true)) {
        set_reason(be, RAYO_BACKEND_DISABLED, "disabled by [%s] enabled = no", section);
        return true;
    }
    return false;
}

/* The device named by [backend.NAME] device = INDEX|NAME-SUBSTRING. */
static bool choose_device(rayo_backend *be)
{
    const char *want = be->host.config(&be->host, "device");
    be->device = 0;
    if (!want || !*want)
        return true;
    char *end;
    unsigned long idx = strtoul(want, &end, 10);
    if (*end == '\0') {
        if (idx < be->probe.device_count) {
            be->device = (uint32_t)idx;
            return true;
        }
    } else {
        for (uint32_t i = 0; i < be->probe.device_count; i++)
            if (strstr(be->probe.devices[i].name, want)) {
                be->device = i;
                return true;
            }
    }
    set_reason(be, RAYO_BACKEND_UNAVAILABLE, "no device matches [backend.%s] device = %s (%u found)",
               be->name, want, be->probe.device_count);
    return false;
}

static backend_kind kind_of(uint32_t device_type)
{
    switch (device_type) {
    case RAYO_DEVICE_CPU: return KIND_CPU;
    case RAYO_DEVICE_GPU: return KIND_GPU;
    default: return KIND_SOFTWARE;
    }
}

static bool probe_and_init(rayo_backend *be)
{
    const rayo_plugin_descriptor *d = be->desc;
    be->probe.struct_size = sizeof be->probe;
    rayo_clear_error();
    rayo_status st = d->probe(&be->host, &be->probe);
    be->probe.reason[sizeof be->probe.reason - 1] = '\0';
    if (be->probe.device_count > RAYO_MAX_DEVICES)
        be->probe.device_count = RAYO_MAX_DEVICES;
    for (uint32_t i = 0; i < be->probe.device_count; i++)
        be->probe.devices[i].name[sizeof be->probe.devices[i].name - 1] = '\0';
    if (st != RAYO_OK || be->probe.device_count == 0) {
        set_reason(be, RAYO_BACKEND_UNAVAILABLE, "%s",
                   be->probe.reason[0] ? be->probe.reason : st != RAYO_OK ? rayo_strerror(st) : "no device");
        return false;
    }
    if (!choose_device(be))
        return false;
    be->kind = kind_of(be->probe.devices[be->device].type);
    if (be->ctx->force_cpu && be->kind != KIND_CPU) {
        set_reason(be, RAYO_BACKEND_DISABLED, "not a CPU device and force_cpu is set (RAYO_FORCE_CPU)");
        return false;
    }
    rayo_clear_error();
    st = d->init(&be->host, be->device, &be->state);
    if (st != RAYO_OK) {
        const char *msg = rayo_last_error();
        set_reason(be, RAYO_BACKEND_UNAVAILABLE, "init failed: %s%s%s", rayo_strerror(st), *msg ? ": " : "", msg);
        return false;
    }
    return true;
}

static void take_kernels(rayo_backend *be)
{
    const rayo_plugin_descriptor *d = be->desc;
    for (size_t i = 0; i < d->op_count; i++) {
        uint32_t id = d->ops[i].op;
        /* Ids this core does not know (a newer plugin) are ignored. */
        if (id < RAYO_OP_ID_LIMIT && rayo_op_by_id(id) && d->ops[i].fn && !be->kernels[id]) {
            be->kernels[id] = d->ops[i].fn;
            be->op_count++;
        }
    }
}

/* dlopen + checks + probe + init of one file. */
static void load_backend(rayo_backend *be)
{
    if (denied_by_config(be))
        return;
    dlerror();
    be->dl = dlopen(be->path, RTLD_NOW | RTLD_LOCAL);
    if (!be->dl) {
        const char *err = dlerror();
        set_reason(be, RAYO_BACKEND_REJECTED, "cannot load: %s", err ? err : "dlopen failed");
        return;
    }
    const rayo_plugin_descriptor *d = dlsym(be->dl, RAYO_PLUGIN_SYMBOL);
    if (!d) {
        set_reason(be, RAYO_BACKEND_REJECTED, "no '%s' descriptor: not a rayo plugin", RAYO_PLUGIN_SYMBOL);
        return;
    }
    if (!descriptor_ok(be, d))
        return;
    be->desc = d;
    /* The descriptor's name may differ from the file's: check config again. */
    if (denied_by_config(be) || !probe_and_init(be))
        return;
    take_kernels(be);
    be->status = RAYO_BACKEND_LOADED;
    be->reason[0] = '\0';
    core_log(be->ctx, RAYO_LOG_INFO, "%s %s loaded from %s: %s, %zu ops", be->name, be->version,
             be->path, be->probe.devices[be->device].name, be->op_count);
}

/* ---- discovery ---- */
static const char *file_backend_name(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strncmp(base, "rayo-", 5))
        base += 5;
    snprintf(buf, size, "%s", base);
    char *dot = strstr(buf, ".so");
    if (dot)
        *dot = '\0';
    return buf;
}

static rayo_backend *find_loaded_name(rayo_context *ctx, const char *name, const rayo_backend *except)
{
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *o = &ctx->backends[i];
        if (o != except && o->status != RAYO_BACKEND_SHADOWED && !strcmp(o->name, name))
            return o;
    }
    return NULL;
}

static void add_file(rayo_context *ctx, const char *path)
{
    for (size_t i = 0; i < ctx->backend_count; i++)
        if (!strcmp(ctx->backends[i].path, path))
            return; /* the same file through two search paths */
    if (ctx->backend_count == MAX_BACKENDS) {
        core_log(ctx, RAYO_LOG_WARN, "%s: ignored, more than %d plugin files", path, MAX_BACKENDS);
        return;
    }
    rayo_backend *be = &ctx->backends[ctx->backend_count];
    memset(be, 0, sizeof *be);
    be->ctx = ctx;
    be->path = rayo_strdup(path);
    if (!be->path)
        return;
    ctx->backend_count++;
    atomic_init(&be->lost, false);
    file_backend_name(path, be->name, sizeof be->name);
    init_host(be);
    rayo_backend *first = find_loaded_name(ctx, be->name, be);
    if (first) {
        set_reason(be, RAYO_BACKEND_SHADOWED, "shadowed by %s, found earlier in the search path", first->path);
        return;
    }
    load_backend(be);
    first = find_loaded_name(ctx, be->name, be); /* descriptor name may differ */
    if (first && be->status == RAYO_BACKEND_LOADED) {
        if (be->desc->fini)
            be->desc->fini(be->state);
        be->state = NULL;
        set_reason(be, RAYO_BACKEND_SHADOWED, "shadowed by %s, found earlier in the search path", first->path);
    }
}

static bool is_plugin_file(const char *name)
{
    size_t len = strlen(name);
    return !strncmp(name, "rayo-", 5) && len > 8 && !strcmp(name + len - 3, ".so");
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_dir(void *u, const char *dir)
{
    rayo_context *ctx = u;
    DIR *d = opendir(dir);
    if (!d) {
        core_log(ctx, RAYO_LOG_DEBUG, "plugin dir %s: %s", dir, strerror(errno));
        return;
    }
    char *names[MAX_BACKENDS];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < MAX_BACKENDS)
        if (is_plugin_file(de->d_name) && (names[n] = rayo_asprintf("%s/%s", dir, de->d_name)))
            n++;
    closedir(d);
    qsort(names, n, sizeof names[0], compare_strings);
    for (size_t i = 0; i < n; i++) {
        add_file(ctx, names[i]);
        free(names[i]);
    }
}

static void load_file_item(void *u, const char *path)
{
    add_file(u, path);
}

/* In a build tree, librayo lives in <builddir>/core/.libs/: the plugins are
 * then in <builddir>/plugins/NAME/.libs/, found without any install. */
static char *build_tree_plugin_dirs(void)
{
    Dl_info info;
    if (!dladdr((void *)rayo_open, &info) || !info.dli_fname)
        return NULL;
    char *lib = realpath(info.dli_fname, NULL);
    if (!lib)
        return NULL;
    char *slash = strrchr(lib, '/');
    const char *suffix = "/core/.libs";
    size_t sl = strlen(suffix);
    char *result = NULL;
    if (slash) {
        *slash = '\0';
        size_t len = strlen(lib);
        if (len > sl && !strcmp(lib + len - sl, suffix)) {
            lib[len - sl] = '\0';
            result = rayo_asprintf("%s/plugins", lib);
        }
    }
    free(lib);
    return result;
}

static void scan_build_tree(rayo_context *ctx, const char *plugins_dir, char **path_acc)
{
    DIR *d = opendir(plugins_dir);
    if (!d)
        return;
    char *subs[MAX_BACKENDS];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < MAX_BACKENDS)
        if (de->d_name[0] != '.' && (subs[n] = rayo_asprintf("%s/%s/.libs", plugins_dir, de->d_name)))
            n++;
    closedir(d);
    qsort(subs, n, sizeof subs[0], compare_strings);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(subs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char *p = rayo_asprintf("%s%s%s", *path_acc ? *path_acc : "", *path_acc ? ":" : "", subs[i]);
            if (p) {
                free(*path_acc);
                *path_acc = p;
            }
            scan_dir(ctx, subs[i]);
        }
        free(subs[i]);
    }
}

static void append_path(char **acc, const char *more)
{
    if (!more || !*more)
        return;
    char *p = rayo_asprintf("%s%s%s", *acc ? *acc : "", *acc ? ":" : "", more);
    if (p) {
        free(*acc);
        *acc = p;
    }
}

/* The local plugin directory (configure --with-local-plugindir, by default
 * /usr/local/lib/rayo/abiN) holds plugins built on this machine, outside the
 * package manager.  A setuid/setgid program never searches it: a directory
 * writable by a lesser-privileged group must not feed code into it. */
static const char *local_plugin_dir(void)
{
    if (!*RAYO_LOCAL_PLUGINDIR || !strcmp(RAYO_LOCAL_PLUGINDIR, RAYO_PLUGINDIR))
        return NULL;
#ifdef HAVE_GETAUXVAL
    if (getauxval(AT_SECURE))
        return NULL;
#else
    if (getuid() != geteuid() || getgid() != getegid())
        return NULL;
#endif
    return RAYO_LOCAL_PLUGINDIR;
}

void loader_load_all(rayo_context *ctx)
{
    const char *files = config_get(&ctx->cfg, "plugins", "load");
    const char *env_path = config_get(&ctx->cfg, "plugins", "env_path");
    const char *cfg_path = config_get(&ctx->cfg, "plugins", "path");
    char *search = NULL;

    list_each(files, ':', load_file_item, ctx);
    list_each(env_path, ':', scan_dir, ctx);
    append_path(&search, env_path);
    list_each(cfg_path, ':', scan_dir, ctx);
    append_path(&search, cfg_path);
    char *build_plugins = build_tree_plugin_dirs();
    if (build_plugins) {
        core_log(ctx, RAYO_LOG_DEBUG, "running from a build tree: plugins under %s", build_plugins);
        scan_build_tree(ctx, build_plugins, &search);
        free(build_plugins);
    }
    scan_dir(ctx, RAYO_PLUGINDIR);
    append_path(&search, RAYO_PLUGINDIR);
    const char *local = local_plugin_dir();
    if (local) {
        scan_dir(ctx, local);
        append_path(&search, local);
    }
    ctx->search_path = search;
}

void loader_unload_all(rayo_context *ctx)
{
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *be = &ctx->backends[i];
        if (be->status == RAYO_BACKEND_LOADED && be->desc->fini)
            be->desc->fini(be->state);
        if (be->dl)
            dlclose(be->dl);
        free(be->path);
    }
    ctx->backend_count = 0;
}
