# The plugin template is built (not installed) and checked by rayo-conform in
# `make check`, so the template third parties copy is known to work.
check_LTLIBRARIES += examples/plugin-template/rayo-template.la
examples_plugin_template_rayo_template_la_SOURCES = examples/plugin-template/rayo-template.c
examples_plugin_template_rayo_template_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
examples_plugin_template_rayo_template_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	-export-symbols-regex '^rayo_plugin$$'
