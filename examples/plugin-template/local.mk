# SPDX-License-Identifier: MIT
# The plugin template is built (not installed) and checked by rayo-conform in
# `make check`, so the template third parties copy is known to work.
check_LTLIBRARIES += examples/plugin-template/rayo-template.la
examples_plugin_template_rayo_template_la_SOURCES = examples/plugin-template/rayo-template.c
examples_plugin_template_rayo_template_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
examples_plugin_template_rayo_template_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	-export-symbols-regex '^rayo_plugin$$'

# Installed as a standalone project (Makefile + README use only pkg-config)
# under the docs: what a third party copies to start a plugin.
templatedir = $(docdir)/plugin-template
dist_template_DATA = examples/plugin-template/rayo-template.c \
	examples/plugin-template/Makefile examples/plugin-template/README.md
