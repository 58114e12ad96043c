# SPDX-License-Identifier: MIT
# tools/: the command-line programs, built on librayo's public API, and
# tools/conform/, the conformance engine (float64 references, random inputs,
# accuracy contracts): an internal library, not installed, linked into
# rayo-conform, rayo-bench and the tests.  Users include "conform.h" with
# $(CONFORM_CPPFLAGS).
CONFORM_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools/conform
noinst_LTLIBRARIES += tools/conform/libconform.la
tools_conform_libconform_la_SOURCES = tools/conform/conform.h tools/conform/conform-internal.h \
	tools/conform/rng.c tools/conform/op-domains.c tools/conform/ref-f32.c tools/conform/judge.c \
	tools/conform/plans-f32.c tools/conform/guarded-buffer.c tools/conform/fill-inputs.c \
	tools/conform/run-case.c tools/conform/plans-infer.c tools/conform/conform-infer.h \
	tools/conform/ref-infer.c tools/conform/ref-infer.h
tools_conform_libconform_la_CPPFLAGS = $(CONFORM_CPPFLAGS)
tools_conform_libconform_la_LIBADD = core/librayo.la -lm

bin_PROGRAMS += tools/rayo-info tools/rayo-conform tools/rayo-bench tools/rayo-calibrate
tools_rayo_calibrate_SOURCES = tools/rayo-calibrate.c tools/tool-version.h
tools_rayo_calibrate_CPPFLAGS = $(AM_CPPFLAGS) -DRAYO_SYSCONFDIR='"$(sysconfdir)/rayo"'
tools_rayo_calibrate_LDADD = core/librayo.la -lm
tools_rayo_info_SOURCES = tools/rayo-info.c tools/tool-version.h
tools_rayo_info_LDADD = core/librayo.la
tools_rayo_conform_SOURCES = tools/rayo-conform.c tools/tool-version.h
tools_rayo_conform_CPPFLAGS = $(CONFORM_CPPFLAGS)
tools_rayo_conform_LDADD = tools/conform/libconform.la core/librayo.la -lm
tools_rayo_bench_SOURCES = tools/rayo-bench.c tools/tool-version.h tools/bench.h tools/bench-refs.c tools/bench-stream.c \
	tools/bench-plot.c
tools_rayo_bench_CPPFLAGS = $(CONFORM_CPPFLAGS)
tools_rayo_bench_LDADD = tools/conform/libconform.la core/librayo.la -lm $(PTHREAD_LIBS)
tools_rayo_bench_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
