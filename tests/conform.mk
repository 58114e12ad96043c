# SPDX-License-Identifier: MIT
# conformance tests (written with the engine in tools/conform/)

# The engine itself: it must accept right answers and catch planted mistakes,
# so that a green conformance run means something.
check_PROGRAMS += tests/test-conform-engine
tests_test_conform_engine_SOURCES = tests/test-conform-engine.c
tests_test_conform_engine_CPPFLAGS = $(CONFORM_CPPFLAGS)
tests_test_conform_engine_LDADD = tools/conform/libconform.la core/librayo.la -lm
TESTS += tests/test-conform-engine

# Every backend this build tree loads, against the float64 reference.
dist_noinst_SCRIPTS += tests/test-conform.sh
TESTS += tests/test-conform.sh

# rayo-conform through the real loader on a plugin with planted bugs: it
# must report FAIL for exactly those ops and exit 1.
check_LTLIBRARIES += tests/rayo-conformwrong.la
tests_rayo_conformwrong_la_SOURCES = tests/test-conform-wrong-plugin.c
tests_rayo_conformwrong_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
tests_rayo_conformwrong_la_LDFLAGS = $(RAYO_MODULE_FLAGS) -rpath /nowhere
tests_rayo_conformwrong_la_LIBADD = -lm
dist_noinst_SCRIPTS += tests/test-conform-wrong.sh
TESTS += tests/test-conform-wrong.sh
