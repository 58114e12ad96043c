/* SPDX-License-Identifier: MIT */
/* ini-min.h - a small INI parser with inih's stream interface, for builds
 * without inih (the WebAssembly build: no config files, only the INI text of
 * rayo_options.settings).  Selected at build time with -DRAYO_INI_MIN.
 *
 * Same contract as inih's ini_parse_stream (as Debian builds it):
 *   - reader(buf, size, stream) fills buf with the next line like fgets and
 *     returns NULL at the end;
 *   - handler(user, section, name, value) is called for every name = value
 *     (or name : value) line, with whitespace trimmed and inline "; comments"
 *     (a ';' after a space) removed; an indented line continues the previous
 *     name: the handler is called again with that name and the whole trimmed
 *     line; returning 0 marks the line as an error;
 *   - lines starting with ';' or '#' are comments; a UTF-8 BOM is skipped;
 *   - parsing goes on after an error; the result is 0, or the number of
 *     the first line in error.
 * Not installed; hidden in librayo. */
#ifndef RAYO_INI_MIN_H
#define RAYO_INI_MIN_H

typedef int (*ini_handler)(void *user, const char *section, const char *name, const char *value);
typedef char *(*ini_reader)(char *str, int num, void *stream);

/* Longest line read at once; a longer line is read in pieces, as with inih. */
#define INI_MAX_LINE 1024

__attribute__((visibility("hidden")))
int ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user);

#endif
