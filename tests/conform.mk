# conformance tests (written with core/conform.c)
