/* SPDX-License-Identifier: MIT */
/* ini-min.c - see ini-min.h.  Written for rayo; one line at a time, no
 * allocation: sections and names longer than the buffers below are cut, as
 * inih cuts them (same sizes as inih's). */
#include "ini-min.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#define MAX_SECTION 50
#define MAX_NAME 50

static char *skip_space(char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return s;
}

static void trim_end(char *s)
{
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
}

/* First char of s that is in `stop`, or an inline comment (';' after a
 * space), or the end of s. */
static char *find_stop(char *s, const char *stop)
{
    int after_space = 0;
    for (; *s; s++) {
        if (strchr(stop, *s) || (*s == ';' && after_space))
            break;
        after_space = isspace((unsigned char)*s);
    }
    return s;
}

static void copy_cut(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    if (len >= size)
        len = size - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

typedef struct parser {
    char section[MAX_SECTION];
    char name[MAX_NAME];     /* last name seen (cut): an indented line continues it */
    ini_handler handler;
    void *user;
} parser;

/* "[name]": returns 0 when the closing bracket is missing. */
static int parse_section(parser *p, char *start)
{
    char *end = find_stop(start + 1, "]");
    if (*end != ']')
        return 0;
    *end = '\0';
    copy_cut(p->section, start + 1, sizeof p->section);
    p->name[0] = '\0';
    return 1;
}

/* "name = value" or "name : value": returns the handler's verdict, or 0
 * when there is no separator.  An inline comment is looked for before the
 * value's leading spaces are skipped (so "k = ; c" has an empty value). */
static int parse_pair(parser *p, char *start)
{
    char *sep = find_stop(start, "=:");
    if (*sep != '=' && *sep != ':')
        return 0;
    *sep = '\0';
    trim_end(start);
    char *value = sep + 1;
    *find_stop(value, "") = '\0';
    value = skip_space(value);
    trim_end(value);
    copy_cut(p->name, start, sizeof p->name);
    return p->handler(p->user, p->section, start, value);
}

/* One line; returns 0 when the line is an error. */
static int parse_line(parser *p, char *line, int first)
{
    if (first && (unsigned char)line[0] == 0xEF && (unsigned char)line[1] == 0xBB &&
        (unsigned char)line[2] == 0xBF)
        line += 3;
    char *start = skip_space(line);
    trim_end(start);
    if (*start == ';' || *start == '#' || !*start)
        return 1;
    if (p->name[0] && start > line) /* indented: more of the last value, as is */
        return p->handler(p->user, p->section, p->name, start);
    if (*start == '[')
        return parse_section(p, start);
    return parse_pair(p, start);
}

int ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user)
{
    char line[INI_MAX_LINE];
    parser p = {{0}, {0}, handler, user};
    int lineno = 0, first_error = 0;
    while (reader(line, (int)sizeof line, stream) != NULL) {
        lineno++;
        if (!parse_line(&p, line, lineno == 1) && !first_error)
            first_error = lineno;
    }
    return first_error;
}
