# tests/: everything here runs in `make check`.
include tests/conform.mk
