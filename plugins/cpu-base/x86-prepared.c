/* SPDX-License-Identifier: MIT */
/* x86-prepared.c - the prepared weights of an x86 plugin's state
 * (x86-prepared.h): a list under a lock; a model has a few hundred. */
#include "x86-prepared.h"

#include <stdlib.h>

struct x86_prepared {
    x86_prepared *next;
    x86_prepared_key key;
    void *data;
};

static int same_key(const x86_prepared_key *a, const x86_prepared_key *b)
{
    return a->data == b->data && a->kind == b->kind && a->dt == b->dt && a->rows == b->rows &&
           a->cols == b->cols && a->stride == b->stride;
}

/* The entry for key; the caller holds the lock. */
static x86_prepared *entry_of(const x86_state *st, const x86_prepared_key *key)
{
    x86_prepared *e = st->prepared;
    while (e && !same_key(&e->key, key))
        e = e->next;
    return e;
}

void *x86_prepared_find(x86_state *st, const x86_prepared_key *key)
{
    pthread_mutex_lock(&st->prepared_lock);
    x86_prepared *e = entry_of(st, key);
    pthread_mutex_unlock(&st->prepared_lock);
    return e ? e->data : NULL;
}

void *x86_prepared_keep(x86_state *st, const x86_prepared_key *key, void *data)
{
    x86_prepared *fresh = malloc(sizeof *fresh);
    void *kept = NULL;
    pthread_mutex_lock(&st->prepared_lock);
    x86_prepared *twin = entry_of(st, key);
    if (twin) {
        kept = twin->data;
    } else if (fresh) {
        *fresh = (x86_prepared){ st->prepared, *key, data };
        st->prepared = fresh;
        kept = data;
        fresh = NULL;
    }
    pthread_mutex_unlock(&st->prepared_lock);
    free(fresh);
    if (kept != data)
        cpu_free(&st->cpu, data);
    return kept;
}

void x86_prepared_release(cpu_state *base, const void *data, size_t bytes)
{
    x86_state *st = (x86_state *)base;
    x86_prepared *gone = NULL;
    uintptr_t lo = (uintptr_t)data, hi = lo + bytes;
    pthread_mutex_lock(&st->prepared_lock);
    for (x86_prepared **at = &st->prepared; *at;) {
        x86_prepared *e = *at;
        if ((uintptr_t)e->key.data >= lo && (uintptr_t)e->key.data < hi) {
            *at = e->next;
            e->next = gone;
            gone = e;
        } else {
            at = &e->next;
        }
    }
    pthread_mutex_unlock(&st->prepared_lock);
    while (gone) {
        x86_prepared *next = gone->next;
        cpu_free(base, gone->data);
        free(gone);
        gone = next;
    }
}

void x86_prepared_release_all(x86_state *st)
{
    while (st->prepared) {
        x86_prepared *next = st->prepared->next;
        cpu_free(&st->cpu, st->prepared->data);
        free(st->prepared);
        st->prepared = next;
    }
}
