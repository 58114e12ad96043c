# SPDX-License-Identifier: MIT
# ABI compatibility proofs: plugins and simulated cores built from
# one source against the frozen 1.0 plugin header and an imagined 1.99 one.
# What each test proves is written at the top of its source.
ABI_PLUGIN_DIR_FLAG = -DABI_PLUGIN_DIR='"$(abs_top_builddir)/tests/abi/.libs"'
EXTRA_DIST += tests/abi/rayo-plugin-1.0.h tests/abi/rayo-plugin-1.99.h tests/abi/rayo-cxx.cc

check_LTLIBRARIES += tests/abi/rayo-abi10.la tests/abi/rayo-abi199.la
tests_abi_rayo_abi10_la_SOURCES = tests/abi/abi-plugin.c
tests_abi_rayo_abi10_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_abi_rayo_abi199_la_SOURCES = tests/abi/abi-plugin.c
tests_abi_rayo_abi199_la_CPPFLAGS = $(AM_CPPFLAGS) -DABI_199
tests_abi_rayo_abi199_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

# The real headers agree with the frozen 1.0 copy.
TESTS += tests/abi/test-abi-frozen
check_PROGRAMS += tests/abi/test-abi-frozen
tests_abi_test_abi_frozen_SOURCES = tests/abi/test-abi-frozen.c tests/abi/abi-facts-core.c \
	tests/abi/abi-facts-frozen.c \
	tests/abi/abi-facts.h tests/abi/abi-fact.h tests/abi/abi-facts-table.h tests/abi/rayo-plugin-1.0.h

# A 1.0 core and a 1.99 core (simulated) drive the 1.0 and the 1.99 plugin.
TESTS += tests/abi/test-abi-oldcore tests/abi/test-abi-newcore
check_PROGRAMS += tests/abi/test-abi-oldcore tests/abi/test-abi-newcore
tests_abi_test_abi_oldcore_SOURCES = tests/abi/abi-harness.c
tests_abi_test_abi_oldcore_CPPFLAGS = -I$(srcdir)/tests/abi $(ABI_PLUGIN_DIR_FLAG)
tests_abi_test_abi_newcore_SOURCES = tests/abi/abi-harness.c
tests_abi_test_abi_newcore_CPPFLAGS = -I$(srcdir)/tests/abi $(ABI_PLUGIN_DIR_FLAG) -DHARNESS_199

# The real core with both plugins.
TESTS += tests/abi/test-abi-core
check_PROGRAMS += tests/abi/test-abi-core
tests_abi_test_abi_core_SOURCES = tests/abi/test-abi-core.c
tests_abi_test_abi_core_CPPFLAGS = $(AM_CPPFLAGS) $(ABI_PLUGIN_DIR_FLAG)
tests_abi_test_abi_core_LDADD = core/librayo.la

# A C++17 plugin from the template's recipe loads through the core.
dist_noinst_SCRIPTS += tests/abi/test-abi-cxx.sh
TESTS += tests/abi/test-abi-cxx.sh
