# SPDX-License-Identifier: MIT
# core/: librayo and its installed headers (the tools are in tools/).
lib_LTLIBRARIES += core/librayo.la
rayoincludedir = $(includedir)/rayo
rayoinclude_HEADERS = core/rayo.h core/rayo-plugin.h core/rayo-ops.h core/rayo-op-table.h core/rayo-dtype.h

core_librayo_la_SOURCES = \
	core/internal.h core/context.c core/op-table.c core/call-check.c core/op-calls.c core/loader.c core/config.c core/config-check.c \
	core/dispatch.c core/cpu.c core/pool.c core/buffers.c core/log.c core/dtype.c \
	core/plugin-check.c
core_librayo_la_CPPFLAGS = $(AM_CPPFLAGS) -DRAYO_BUILDING_CORE \
	-DRAYO_PLUGINDIR='"$(plugindir)"' -DRAYO_SYSCONFDIR='"$(sysconfdir)/rayo"' \
	-DRAYO_VENDORCONFDIR='"$(vendorconfdir)"' -DRAYO_LOCAL_PLUGINDIR='"$(localplugindir)"' \
	-DRAYO_BUILD_DIR='"$(abs_top_builddir)"' -DRAYO_ABI_MAJOR_STR='"$(RAYO_ABI_MAJOR)"'
core_librayo_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS) $(INIH_CFLAGS) -fvisibility=hidden \
	-fno-semantic-interposition
core_librayo_la_LIBADD = $(INIH_LIBS) $(PTHREAD_LIBS) -lm
# Only the public API leaves the library (rayo_* functions not hidden),
# each with the symbol version RAYO_1.0 (core/librayo.map).
core_librayo_la_LDFLAGS = -version-info $(RAYO_LT_VERSION) -no-undefined \
	-Wl,--version-script=$(srcdir)/core/librayo.map
EXTRA_core_librayo_la_DEPENDENCIES = core/librayo.map
EXTRA_DIST += core/librayo.map
