# core/: librayo, its installed headers, and the CLI tools.
lib_LTLIBRARIES += core/librayo.la
rayoincludedir = $(includedir)/rayo
rayoinclude_HEADERS = core/rayo.h core/rayo-plugin.h core/rayo-ops.h core/rayo-op-table.h

core_librayo_la_SOURCES = \
	core/internal.h core/context.c core/ops.c core/loader.c core/config.c \
	core/dispatch.c core/cpu.c core/pool.c core/buffers.c core/log.c \
	core/plugin-check.c
core_librayo_la_CPPFLAGS = $(AM_CPPFLAGS) -DRAYO_BUILDING_CORE \
	-DRAYO_PLUGINDIR='"$(plugindir)"' -DRAYO_SYSCONFDIR='"$(sysconfdir)/rayo"' \
	-DRAYO_BUILD_DIR='"$(abs_top_builddir)"' -DRAYO_ABI_MAJOR_STR='"$(RAYO_ABI_MAJOR)"'
core_librayo_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS) $(INIH_CFLAGS) -fvisibility=hidden \
	-fno-semantic-interposition
core_librayo_la_LIBADD = $(INIH_LIBS) $(PTHREAD_LIBS) -lm
# Only the public API leaves the library (rayo_* functions).
core_librayo_la_LDFLAGS = -version-info $(RAYO_LT_VERSION) -no-undefined \
	-export-symbols-regex '^rayo_'

# The conformance engine: float64 references, random inputs, contracts.
# Linked into rayo-conform, rayo-bench and the tests; not part of librayo.
noinst_LTLIBRARIES += core/libconform.la
core_libconform_la_SOURCES = core/conform.c core/conform.h
core_libconform_la_LIBADD = core/librayo.la -lm

bin_PROGRAMS += core/rayo-info core/rayo-conform
core_rayo_info_SOURCES = core/rayo-info.c
core_rayo_info_LDADD = core/librayo.la
core_rayo_conform_SOURCES = core/rayo-conform.c
core_rayo_conform_LDADD = core/libconform.la core/librayo.la -lm

bin_PROGRAMS += core/rayo-bench
core_rayo_bench_SOURCES = core/rayo-bench.c
core_rayo_bench_LDADD = core/libconform.la core/librayo.la -lm $(PTHREAD_LIBS)
core_rayo_bench_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
