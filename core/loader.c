/* SPDX-License-Identifier: MIT */
/* loader.c - finds, checks, probes and initialises backend plugins.
 *
 * Order of trust.  Before dlopen, with nothing of the plugin run: the file
 * name against plugins.allow/deny, the file itself (a regular file, not
 * writable by others when we run as root, an ELF shared object of this
 * machine whose segments all lie in the file).  dlopen then maps the file
 * and runs its ELF constructors: that cannot be prevented, so a plugin with
 * constructors has run code before the checks below (rayo-plugin.h says so).
 * After dlopen and before any call into the plugin: the data-only
 * descriptor (where it lies, its size, magic, ABI major, architecture, the
 * CPU and OS features it needs, and that every pointer in it points into the
 * plugin).  Every plugin that is not used is kept in the list with the
 * reason, for rayo-info; nothing here aborts the process. */
#define _GNU_SOURCE
#include "internal.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef __EMSCRIPTEN__
#include <link.h>
#include <sys/auxv.h>
#endif

#ifndef RAYO_LOCAL_PLUGINDIR
#define RAYO_LOCAL_PLUGINDIR "" /* none (the WebAssembly build) */
#endif

bool backend_active(const rayo_backend *be)
{
    return be->status == RAYO_BACKEND_LOADED && !atomic_load(&be->lost);
}

rayo_backend *backend_by_name(const rayo_context *ctx, const char *name)
{
    /* A name may be listed several times (a rejected file, then a good
     * one): the loaded one is the backend of that name. */
    rayo_backend *first = NULL;
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *be = ctx->backends[i];
        if (strcmp(be->name, name) || be->status == RAYO_BACKEND_SHADOWED)
            continue;
        if (be->status == RAYO_BACKEND_LOADED)
            return be;
        if (!first)
            first = be;
    }
    return first;
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

/* Where the setting a plugin's message is about was made: a message that
 * begins "[backend.NAME] KEY" (rayo-plugin(7) asks for that form) gets the
 * origin of KEY, like the core's own warnings; NULL for other messages. */
static const char *setting_origin(const rayo_backend *be, const char *msg)
{
    char section[64];
    int n = snprintf(section, sizeof section, "[backend.%s] ", be->name);
    if (n < 0 || (size_t)n >= sizeof section || strncmp(msg, section, (size_t)n))
        return NULL;
    const char *key = msg + n;
    size_t len = strcspn(key, " =:,");
    char name[64];
    if (len == 0 || len >= sizeof name)
        return NULL;
    memcpy(name, key, len);
    name[len] = '\0';
    snprintf(section, sizeof section, "backend.%s", be->name);
    return config_origin(&be->ctx->cfg, section, name);
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
    const char *origin = setting_origin(be, msg);
    if (origin)
        core_log(be->ctx, (rayo_log_level)level, "%s: %s: %s", origin, be->name, msg);
    else
        core_log(be->ctx, (rayo_log_level)level, "%s: %s", be->name, msg);
}

static void host_set_error(const rayo_host *host, const char *fmt, ...)
{
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    rayo__set_errorv(fmt, ap);
    va_end(ap);
    rayo__note_plugin_message();
}

static const char *host_config(const rayo_host *host, const char *key)
{
    rayo_backend *be = host_backend(host);
    char section[64];
    snprintf(section, sizeof section, "backend.%s", be->name);
    if (key)
        backend_note_key(be, key);
    return key ? config_get(&be->ctx->cfg, section, key) : NULL;
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
    h->alloc_aligned = rayo__alloc_aligned;
    h->free_aligned = rayo__free_aligned;
    h->num_threads = host_num_threads;
    h->parallel_for = host_parallel_for;
    h->cache_dir = host_cache_dir;
}

/* ---- checks on the file, before dlopen (nothing of the plugin runs) ---- */
#ifndef __EMSCRIPTEN__
/* Root, or a setuid/setgid program: a plugin anyone can replace is refused. */
static bool privileged(void)
{
    return geteuid() == 0 || getauxval(AT_SECURE) != 0;
}

static bool writable_by_others(const char *path, char *what, size_t size)
{
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(what, size, "%s (mode %04o)", path, (unsigned)(st.st_mode & 07777));
        return true;
    }
    return false;
}

/* Like the Vulkan loader for elevated processes: whoever can write the file
 * or its folder can run code in this process. */
static bool ownership_ok(rayo_backend *be)
{
    char what[1100] = "";
    char *dir = rayo__strdup(be->path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    bool writable = writable_by_others(be->path, what, sizeof what) ||
                    (slash && writable_by_others(dir, what, sizeof what));
    free(dir);
    if (!writable)
        return true;
    if (privileged()) {
        set_reason(be, RAYO_BACKEND_REJECTED,
                   "%s is writable by group or others, and this process runs as root or setuid", what);
        return false;
    }
    core_log(be->ctx, RAYO_LOG_WARN, "%s: %s is writable by group or others: they can run code in this process",
             be->path, what);
    return true;
}

static bool elf_ok(rayo_backend *be, int fd, const struct stat *st)
{
    unsigned char *head = malloc(PLUGIN_HEAD_BYTES);
    if (!head) {
        set_reason(be, RAYO_BACKEND_REJECTED, "out of memory");
        return false;
    }
    size_t len = 0;
    while (len < PLUGIN_HEAD_BYTES) {
        ssize_t r = pread(fd, head + len, PLUGIN_HEAD_BYTES - len, (off_t)len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    char why[256];
    bool ok = plugin_elf_ok(head, len, (uint64_t)st->st_size, why, sizeof why);
    free(head);
    if (!ok)
        set_reason(be, RAYO_BACKEND_REJECTED, "%s", why);
    return ok;
}
#endif

/* A truncated file would kill the process with SIGBUS inside dlopen, a FIFO
 * would block it forever: look at the file before dlopen sees it. */
static bool file_ok(rayo_backend *be)
{
#ifdef __EMSCRIPTEN__
    (void)be;
    return true; /* the engine validates side modules */
#else
    int fd = open(be->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        set_reason(be, RAYO_BACKEND_REJECTED, "cannot open: %s", strerror(errno));
        return false;
    }
    struct stat st;
    bool ok = false;
    if (fstat(fd, &st) != 0)
        set_reason(be, RAYO_BACKEND_REJECTED, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        set_reason(be, RAYO_BACKEND_REJECTED, "%s, not a plugin file", file_type_name(st.st_mode));
    else
        ok = ownership_ok(be) && elf_ok(be, fd, &st);
    close(fd);
    return ok;
#endif
}

/* ---- checks on the descriptor (after dlopen, before any call) ---- */
#ifndef __EMSCRIPTEN__
struct map_acc { uintptr_t base; const char *name; plugin_map *map; };

static int collect_segments(struct dl_phdr_info *info, size_t size, void *u)
{
    (void)size;
    struct map_acc *acc = u;
    if (info->dlpi_addr != acc->base || !info->dlpi_name || strcmp(info->dlpi_name, acc->name))
        return 0;
    for (size_t i = 0; i < info->dlpi_phnum && acc->map->count < 16; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        plugin_segment *s = &acc->map->seg[acc->map->count++];
        s->start = info->dlpi_addr + ph->p_vaddr;
        s->end = s->start + ph->p_memsz;
        s->exec = (ph->p_flags & PF_X) != 0;
    }
    return 1;
}

/* The plugin's loaded segments, and the size of its descriptor symbol. */
static void plugin_layout(rayo_backend *be, const void *desc, plugin_map *map, size_t *sym_size)
{
    struct link_map *lm = NULL;
    map->count = 0;
    *sym_size = 0;
    if (dlinfo(be->dl, RTLD_DI_LINKMAP, &lm) == 0 && lm) {
        struct map_acc acc = {lm->l_addr, lm->l_name, map};
        dl_iterate_phdr(collect_segments, &acc);
    }
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(desc, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && info.dli_sname &&
        !strcmp(info.dli_sname, RAYO_PLUGIN_SYMBOL))
        *sym_size = sym->st_size;
}
#else
static void plugin_layout(rayo_backend *be, const void *desc, plugin_map *map, size_t *sym_size)
{
    (void)be;
    /* No ELF maps in WebAssembly: the engine keeps code and data apart, and
     * a wild pointer traps instead of running code.  A function pointer is
     * an index into the function table (a small number, below the data the
     * descriptor lies in), so anything but NULL passes. */
    map->count = 1;
    map->seg[0] = (plugin_segment){1, UINTPTR_MAX, true};
    *sym_size = ((const rayo_plugin_descriptor *)desc)->struct_size;
}
#endif

static bool layout_ok(rayo_backend *be, const rayo_plugin_descriptor *d)
{
    plugin_map map;
    size_t sym_size;
    char why[256];
    plugin_layout(be, d, &map, &sym_size);
    if (!plugin_symbol_ok(&map, d, sym_size, why, sizeof why)) {
        set_reason(be, RAYO_BACKEND_REJECTED, "%s", why);
        return false;
    }
    be->abi_major = d->abi_major;
    be->abi_minor = d->abi_minor;
    if (!plugin_descriptor_ok(&map, d, sym_size, why, sizeof why)) {
        set_reason(be, RAYO_BACKEND_REJECTED, "%s", why);
        return false;
    }
    return true;
}

static bool descriptor_ok(rayo_backend *be, const rayo_plugin_descriptor *d)
{
    if (!layout_ok(be, d))
        return false;
    if (memchr(d->name, '\0', sizeof d->name) == NULL || !d->name[0] ||
        memchr(d->version, '\0', sizeof d->version) == NULL) {
        set_reason(be, RAYO_BACKEND_REJECTED, "descriptor name or version not a terminated string");
        return false;
    }
    if (strcmp(be->name, d->name))
        core_log(be->ctx, RAYO_LOG_WARN, "%s: the file name says \"%s\" but the plugin calls itself \"%s\", "
                 "the name configuration and tools use: rename the file rayo-%s.so", be->path, be->name,
                 d->name, d->name);
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
    if (!config_get_bool(ctx, section, "enabled", true)) {
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
    rayo__clear_error();
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
    rayo__clear_error();
    st = d->init(&be->host, be->device, &be->state);
    if (st != RAYO_OK) {
        const char *msg = rayo_last_error();
        set_reason(be, RAYO_BACKEND_UNAVAILABLE, "init failed: %s%s%s", rayo_strerror(st), *msg ? ": " : "", msg);
        return false;
    }
    return true;
}

/* Entry i of the plugin's op table, whose entries are op_entry_size bytes
 * apart (larger in a newer minor; checked by plugin_descriptor_ok). */
static const rayo_op_entry *op_entry(const rayo_plugin_descriptor *d, size_t i)
{
    return (const rayo_op_entry *)(const void *)((const char *)d->ops + i * d->op_entry_size);
}

/* Stores fn for (op, dtypes) unless that slot has a kernel; true if stored. */
static bool take_one(rayo_backend *be, uint32_t op, uint32_t dtypes, rayo_kernel_fn fn)
{
    rayo_kernel_fn *slot = NULL;
    if (dtypes == 0) {
        if (op_combo_index(op, 0) >= 0)
            slot = &be->kernels[op];
    } else {
        int s = op_combo_slot(op, dtypes);
        if (s >= 0)
            slot = &be->combo_kernels[s];
    }
    if (!slot || *slot)
        return false; /* a combination this core does not list, or taken by an earlier entry */
    *slot = fn;
    return true;
}

/* Explicit entries first, then RAYO_DTYPES_ANY ones fill what is left of
 * their op, so an entry for one combination wins whatever the order.  Ops
 * and combinations this core does not know (a newer plugin) are ignored. */
static void take_kernels(rayo_backend *be)
{
    const rayo_plugin_descriptor *d = be->desc;
    for (int any = 0; any < 2; any++) {
        for (size_t i = 0; i < d->op_count; i++) {
            const rayo_op_entry *e = op_entry(d, i);
            if (!e->fn || !rayo_op_by_id(e->op) || (e->dtypes == RAYO_DTYPES_ANY) != any)
                continue;
            bool taken = false;
            if (!any) {
                taken = take_one(be, e->op, e->dtypes, e->fn);
            } else {
                for (size_t c = 0; c < rayo_op_combo_count(e->op); c++)
                    taken |= take_one(be, e->op, rayo_op_combo(e->op, c)->dtypes, e->fn);
            }
            be->op_count += taken;
        }
    }
}

/* A device plugin (one with its own memory API: a GPU driver behind it)
 * waits for its first use: starting a GPU driver costs far more than the
 * rest of rayo_open, and an application that stays on the CPU should not
 * pay it.  [rayo] lazy_init = no (rayo-info sets it) starts every plugin at
 * open; so does force_cpu, which must see the device's type to refuse it. */
static bool defer_start(rayo_backend *be)
{
    return be->desc->memory && !be->ctx->force_cpu && config_get_bool(be->ctx, "rayo", "lazy_init", true);
}

static void log_loaded(rayo_backend *be)
{
    core_log(be->ctx, RAYO_LOG_INFO, "%s %s loaded from %s: %s, %zu ops", be->name, be->version, be->path,
             be->probe.devices[be->device].name, be->op_count);
}

/* Until it starts, a deferred backend ranks as a GPU (what a device plugin
 * usually is): its links take calls from the offload threshold up. */
static void defer(rayo_backend *be)
{
    be->deferred = true;
    be->kind = KIND_GPU;
    take_kernels(be);
    be->status = RAYO_BACKEND_LOADED;
    be->reason[0] = '\0';
    core_log(be->ctx, RAYO_LOG_INFO, "%s %s loaded from %s, %zu ops: its device starts at first use", be->name,
             be->version, be->path, be->op_count);
}

/* Started lazily: a device that turns out not to be a GPU (lavapipe) would
 * have come after the CPU backends in the default order, so it takes no
 * calls by default unless an order names it; use by name still works. */
static void started_late(rayo_backend *be)
{
    backend_check_keys(be);
    log_loaded(be);
    if (be->kind != KIND_GPU && !be->named_in_order) {
        atomic_store(&be->demoted, true);
        core_log(be->ctx, RAYO_LOG_INFO, "%s: %s is not a GPU: calls go to it only where an order names it",
                 be->name, be->probe.devices[be->device].name);
    }
}

rayo_status backend_start(rayo_backend *be)
{
    if (!be->deferred || atomic_load_explicit(&be->started, memory_order_acquire))
        return backend_active(be) ? RAYO_OK : RAYO_E_UNSUPPORTED;
    pthread_mutex_lock(&be->start_lock);
    if (!atomic_load_explicit(&be->started, memory_order_relaxed)) {
        core_log(be->ctx, RAYO_LOG_DEBUG, "%s: starting its device (first use)", be->name);
        if (probe_and_init(be)) {
            started_late(be);
        } else {
            atomic_store(&be->lost, true); /* its links are skipped from now on (reason: rayo-info) */
        }
        atomic_store_explicit(&be->started, true, memory_order_release);
    }
    pthread_mutex_unlock(&be->start_lock);
    return backend_active(be) ? RAYO_OK : RAYO_E_UNSUPPORTED;
}

bool backend_usable(rayo_backend *be)
{
    return backend_active(be) && backend_start(be) == RAYO_OK;
}

rayo_status backend_deferred_kernel(void *arg, const rayo_call *call)
{
    rayo_backend *be = arg;
    if (backend_start(be) != RAYO_OK || atomic_load_explicit(&be->demoted, memory_order_relaxed))
        return RAYO_E_UNSUPPORTED; /* the call passes on */
    rayo_kernel_fn fn = backend_kernel(be, call->op, call->dtypes);
    return fn ? fn(be->state, call) : RAYO_E_UNSUPPORTED;
}

/* checks + dlopen + checks + probe + init of one file. */
static void load_backend(rayo_backend *be)
{
    if (denied_by_config(be) || !file_ok(be))
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
    if (denied_by_config(be))
        return;
    if (defer_start(be)) {
        defer(be);
        return;
    }
    if (!probe_and_init(be))
        return;
    atomic_store(&be->started, true);
    take_kernels(be);
    backend_check_keys(be);
    be->status = RAYO_BACKEND_LOADED;
    be->reason[0] = '\0';
    log_loaded(be);
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

/* Only a loaded backend shadows later files of its name: a rejected or
 * unavailable file must not hide a good copy found later. */
static rayo_backend *find_loaded_name(rayo_context *ctx, const char *name, const rayo_backend *except)
{
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *o = ctx->backends[i];
        if (o != except && o->status == RAYO_BACKEND_LOADED && !strcmp(o->name, name))
            return o;
    }
    return NULL;
}

static rayo_backend *new_backend(rayo_context *ctx, const char *path)
{
    if (ctx->backend_count == ctx->backend_cap) {
        size_t cap = ctx->backend_cap ? 2 * ctx->backend_cap : 16;
        rayo_backend **list = realloc(ctx->backends, cap * sizeof *list);
        if (!list)
            return NULL;
        ctx->backends = list;
        ctx->backend_cap = cap;
    }
    rayo_backend *be = calloc(1, sizeof *be);
    if (!be || !(be->path = rayo__strdup(path))) {
        free(be);
        return NULL;
    }
    ctx->backends[ctx->backend_count++] = be;
    be->ctx = ctx;
    atomic_init(&be->lost, false);
    pthread_mutex_init(&be->keys_lock, NULL);
    pthread_mutex_init(&be->start_lock, NULL);
    atomic_init(&be->started, false);
    atomic_init(&be->demoted, false);
    file_backend_name(path, be->name, sizeof be->name);
    init_host(be);
    return be;
}

static void add_file(rayo_context *ctx, const char *path)
{
    for (size_t i = 0; i < ctx->backend_count; i++)
        if (!strcmp(ctx->backends[i]->path, path))
            return; /* the same file through two search paths */
    core_log(ctx, RAYO_LOG_DEBUG, "plugin file %s: trying", path);
    rayo_backend *be = new_backend(ctx, path);
    if (!be) {
        core_log(ctx, RAYO_LOG_WARN, "%s: ignored: out of memory", path);
        return;
    }
    rayo_backend *first = find_loaded_name(ctx, be->name, be);
    if (first) {
        set_reason(be, RAYO_BACKEND_SHADOWED, "shadowed by %s, found earlier in the search path", first->path);
        return;
    }
    if (ctx->loaded_count == MAX_BACKENDS) {
        set_reason(be, RAYO_BACKEND_DISABLED, "not loaded: this context already uses %d backends, the most it can",
                   MAX_BACKENDS);
        core_log(ctx, RAYO_LOG_WARN, "%s: %s", path, be->reason);
        return;
    }
    load_backend(be);
    first = find_loaded_name(ctx, be->name, be); /* descriptor name may differ */
    if (first && be->status == RAYO_BACKEND_LOADED) {
        if (be->desc->fini && atomic_load(&be->started))
            be->desc->fini(be->state);
        be->state = NULL;
        set_reason(be, RAYO_BACKEND_SHADOWED, "shadowed by %s, found earlier in the search path", first->path);
    }
    ctx->loaded_count += be->status == RAYO_BACKEND_LOADED;
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

/* File names of a folder: as many as it holds. */
typedef struct names_list { char **items; size_t count, cap; } names_list;

static void names_add(names_list *l, char *name)
{
    if (!name)
        return;
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **items = realloc(l->items, cap * sizeof *items);
        if (!items) {
            free(name);
            return;
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->count++] = name;
}

static void names_free(names_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
}

/* Sorts a list in place; an empty list has no array (qsort must not get NULL). */
static void names_sort(names_list *l)
{
    if (l->count > 1)
        qsort(l->items, l->count, sizeof l->items[0], compare_strings);
}

static void scan_dir(void *u, const char *dir)
{
    rayo_context *ctx = u;
    DIR *d = opendir(dir);
    if (!d) {
        core_log(ctx, RAYO_LOG_DEBUG, "plugin dir %s: %s", dir, strerror(errno));
        return;
    }
    names_list names = {0};
    struct dirent *de;
    while ((de = readdir(d)))
        if (is_plugin_file(de->d_name))
            names_add(&names, rayo__asprintf("%s/%s", dir, de->d_name));
    closedir(d);
    names_sort(&names);
    for (size_t i = 0; i < names.count; i++)
        add_file(ctx, names.items[i]);
    names_free(&names);
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
            result = rayo__asprintf("%s/plugins", lib);
        }
    }
    free(lib);
    return result;
}

static void append_path(char **acc, const char *more)
{
    if (!more || !*more)
        return;
    char *p = rayo__asprintf("%s%s%s", *acc ? *acc : "", *acc ? ":" : "", more);
    if (p) {
        free(*acc);
        *acc = p;
    }
}

static void scan_build_tree(rayo_context *ctx, const char *plugins_dir, char **path_acc)
{
    DIR *d = opendir(plugins_dir);
    if (!d)
        return;
    names_list subs = {0};
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            names_add(&subs, rayo__asprintf("%s/%s/.libs", plugins_dir, de->d_name));
    closedir(d);
    names_sort(&subs);
    for (size_t i = 0; i < subs.count; i++) {
        struct stat st;
        if (stat(subs.items[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            append_path(path_acc, subs.items[i]);
            scan_dir(ctx, subs.items[i]);
        }
    }
    names_free(&subs);
}

/* The local plugin directory (configure --with-local-plugindir; by default
 * /usr/local/lib/rayo/abiN for --prefix=/usr, else the plugin directory
 * itself, skipped here) holds plugins built on this machine, outside the
 * package manager.  A setuid/setgid program never searches it: a directory
 * writable by a lesser-privileged group must not feed code into it. */
static const char *local_plugin_dir(void)
{
    if (!*RAYO_LOCAL_PLUGINDIR || !strcmp(RAYO_LOCAL_PLUGINDIR, RAYO_PLUGINDIR))
        return NULL;
#ifndef __EMSCRIPTEN__
    if (getauxval(AT_SECURE))
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

void backends_release_constant(rayo_context *ctx, const void *data, size_t bytes)
{
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *be = ctx->backends[i];
        if (be->status == RAYO_BACKEND_LOADED && atomic_load(&be->started) &&
            be->desc->struct_size >= DESCRIPTOR_V1_2_SIZE && be->desc->release_constant)
            be->desc->release_constant(be->state, data, bytes);
    }
}

void loader_unload_all(rayo_context *ctx, bool call_plugins)
{
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *be = ctx->backends[i];
        if (call_plugins && be->status == RAYO_BACKEND_LOADED && be->desc->fini && atomic_load(&be->started))
            be->desc->fini(be->state);
        if (call_plugins && be->dl)
            dlclose(be->dl);
        backend_free_keys(be);
        pthread_mutex_destroy(&be->keys_lock);
        pthread_mutex_destroy(&be->start_lock);
        free(be->path);
        free(be);
    }
    free(ctx->backends);
    ctx->backends = NULL;
    ctx->backend_count = ctx->backend_cap = ctx->loaded_count = 0;
}
