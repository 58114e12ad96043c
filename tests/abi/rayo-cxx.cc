// rayo-cxx.cc - a rayo plugin written in C++17, from the plugin template's
// recipe (examples/plugin-template/rayo-template.c): include rayo-plugin.h,
// define `RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin`.
// In C++ a namespace-scope const has internal linkage unless it was declared
// extern; rayo-plugin.h declares it (inside extern "C"), so the definition
// below is exported under its C name.  Without that declaration the core
// would find no descriptor ("not a rayo plugin").  tests/abi/test-abi-cxx.sh
// builds this with g++ -std=c++17 and loads it through the core.
//
// What a C++ plugin must mind: no exception may leave a kernel (they are
// called from C: noexcept), no static constructors (code would run before
// the core checked the descriptor: the op table below is constexpr data).
#include <rayo-plugin.h>

#include <cstdio>
#include <new>

namespace {

struct cxx_state {
    const rayo_host *host;
};

rayo_status cxx_probe(const rayo_host *, rayo_probe_result *result) noexcept
{
    result->device_count = 1;
    std::snprintf(result->devices[0].name, sizeof result->devices[0].name, "C++ plugin device (host CPU)");
    result->devices[0].type = RAYO_DEVICE_CPU;
    result->devices[0].flags = RAYO_DEVICE_HOST_MEMORY;
    return RAYO_OK;
}

rayo_status cxx_init(const rayo_host *host, uint32_t, void **out) noexcept
{
    auto *st = new (std::nothrow) cxx_state{host};
    if (!st)
        return RAYO_E_NOMEM;
    *out = st;
    return RAYO_OK;
}

void cxx_fini(void *state) noexcept
{
    delete static_cast<cxx_state *>(state);
}

// y = a + b.  The core has checked the pointers and that n > 0.
rayo_status cxx_add(void *, const rayo_call *c) noexcept
{
    const auto *a = static_cast<const float *>(c->a);
    const auto *b = static_cast<const float *>(c->b);
    auto *y = static_cast<float *>(c->y);
    for (size_t i = 0; i < c->n; i++)
        y[i] = a[i] + b[i];
    return RAYO_OK;
}

constexpr rayo_op_entry cxx_ops[] = {
    {RAYO_OP_ADD, 0, cxx_add},
};

} // namespace

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    RAYO_PLUGIN_MAGIC, RAYO_PLUGIN_ABI_MAJOR, RAYO_PLUGIN_ABI_MINOR, sizeof(rayo_plugin_descriptor),
    RAYO_ARCH_ANY, "cxx", "1.0", 0,
    5, 0, // priority below scalar; reserved
    cxx_probe, cxx_init, cxx_fini,
    cxx_ops, sizeof cxx_ops / sizeof cxx_ops[0],
    nullptr, // host memory: the core provides buffers and batches
    sizeof(rayo_op_entry), 0,
    nullptr, // release_constant (1.2): it keeps nothing from constant buffers
};
