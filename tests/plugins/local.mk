# SPDX-License-Identifier: MIT
# Plugins built only for tests/test-loader.c: one source, one variant each.
FAKE_MODULE_FLAGS = -module -avoid-version -shared -rpath /nowhere
FAKE_CPPFLAGS = $(AM_CPPFLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakegood.la
tests_plugins_rayo_fakegood_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakegood_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_GOOD -DFAKE_NAME='"fakegood"'
tests_plugins_rayo_fakegood_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakeabi2.la
tests_plugins_rayo_fakeabi2_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakeabi2_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_ABI2 -DFAKE_NAME='"fakeabi2"'
tests_plugins_rayo_fakeabi2_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakenewer.la
tests_plugins_rayo_fakenewer_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakenewer_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_NEWER -DFAKE_NAME='"fakenewer"'
tests_plugins_rayo_fakenewer_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakeprobefail.la
tests_plugins_rayo_fakeprobefail_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakeprobefail_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_PROBEFAIL -DFAKE_NAME='"fakeprobefail"'
tests_plugins_rayo_fakeprobefail_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakeinitfail.la
tests_plugins_rayo_fakeinitfail_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakeinitfail_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_INITFAIL -DFAKE_NAME='"fakeinitfail"'
tests_plugins_rayo_fakeinitfail_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakeneedcpu.la
tests_plugins_rayo_fakeneedcpu_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakeneedcpu_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_NEEDCPU -DFAKE_NAME='"fakeneedcpu"'
tests_plugins_rayo_fakeneedcpu_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakerunfail.la
tests_plugins_rayo_fakerunfail_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakerunfail_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_RUNFAIL -DFAKE_NAME='"fakerunfail"'
tests_plugins_rayo_fakerunfail_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakelost.la
tests_plugins_rayo_fakelost_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakelost_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_LOST -DFAKE_NAME='"fakelost"'
tests_plugins_rayo_fakelost_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

# A file whose name differs from the name its descriptor gives (a warning).
check_LTLIBRARIES += tests/plugins/rayo-fakemisnamed.la
tests_plugins_rayo_fakemisnamed_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakemisnamed_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_GOOD -DFAKE_NAME='"othername"'
tests_plugins_rayo_fakemisnamed_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakebadmagic.la
tests_plugins_rayo_fakebadmagic_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakebadmagic_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_BADMAGIC -DFAKE_NAME='"fakebadmagic"'
tests_plugins_rayo_fakebadmagic_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakenodesc.la
tests_plugins_rayo_fakenodesc_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakenodesc_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_NODESC -DFAKE_NAME='"fakenodesc"'
tests_plugins_rayo_fakenodesc_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakebadops.la
tests_plugins_rayo_fakebadops_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakebadops_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_BADOPS -DFAKE_NAME='"fakebadops"'
tests_plugins_rayo_fakebadops_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakemanyops.la
tests_plugins_rayo_fakemanyops_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakemanyops_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_MANYOPS -DFAKE_NAME='"fakemanyops"'
tests_plugins_rayo_fakemanyops_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakebadkernel.la
tests_plugins_rayo_fakebadkernel_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakebadkernel_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_BADKERNEL -DFAKE_NAME='"fakebadkernel"'
tests_plugins_rayo_fakebadkernel_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakeabssym.la
tests_plugins_rayo_fakeabssym_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakeabssym_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_ABSSYM -DFAKE_NAME='"fakeabssym"'
tests_plugins_rayo_fakeabssym_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakesmalldesc.la
tests_plugins_rayo_fakesmalldesc_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakesmalldesc_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_SMALLDESC -DFAKE_NAME='"fakesmalldesc"'
tests_plugins_rayo_fakesmalldesc_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakememnull.la
tests_plugins_rayo_fakememnull_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakememnull_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_MEMNULL -DFAKE_NAME='"fakememnull"'
tests_plugins_rayo_fakememnull_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakememsize0.la
tests_plugins_rayo_fakememsize0_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakememsize0_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_MEMSIZE0 -DFAKE_NAME='"fakememsize0"'
tests_plugins_rayo_fakememsize0_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakector.la
tests_plugins_rayo_fakector_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakector_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_CTOR -DFAKE_NAME='"fakector"'
tests_plugins_rayo_fakector_la_LDFLAGS = $(FAKE_MODULE_FLAGS)

check_LTLIBRARIES += tests/plugins/rayo-fakegpu.la
tests_plugins_rayo_fakegpu_la_SOURCES = tests/plugins/fake.c
tests_plugins_rayo_fakegpu_la_CPPFLAGS = $(FAKE_CPPFLAGS) -DFAKE_GPU -DFAKE_NAME='"fakegpu"'
tests_plugins_rayo_fakegpu_la_LDFLAGS = $(FAKE_MODULE_FLAGS)
