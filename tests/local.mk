# tests/: everything here runs in `make check`.  Backend-specific tests
# live in their own fragments.
include tests/conform.mk
include tests/avx2.mk
include tests/neon.mk
include tests/vulkan.mk
include tests/cuda.mk
include tests/wasm.mk
