/* SPDX-License-Identifier: MIT */
/* vk-memory.c - pooled device and staging memory.
 *
 * vkAllocateMemory is slow and drivers cap the number of allocations, so
 * memory comes in blocks (64 MiB, or one request's size rounded up when
 * larger) each covered by one VkBuffer; buffers and temporaries are ranges
 * of a block (first fit, freed ranges merged with their neighbours).  Empty
 * blocks are kept for reuse up to a budget, so a steady stream of calls
 * allocates nothing from the driver after the first one.
 */
#include "vk-internal.h"

#include <stdlib.h>
#include <string.h>

#define VK_BLOCK_SIZE ((VkDeviceSize)64 << 20)
#define VK_ALIGN ((VkDeviceSize)256)           /* >= every offset alignment in practice */
#define VK_KEEP_EMPTY ((VkDeviceSize)1 << 30)   /* empty bytes kept per pool */
#define MAPPED_SMALL_BYTES ((VkDeviceSize)64 << 10) /* an application's buffers in the mapped pool */
#define MAPPED_BLOCK_SIZE ((VkDeviceSize)1 << 20)

static VkDeviceSize round_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

/* The memory type for buffers of the plugin's usage: it must have all of
 * `need`; among those, the most `want` flags and none of `avoid` win. */
static int pick_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits,
                     VkMemoryPropertyFlags need, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags avoid)
{
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (f & need) != need)
            continue;
        int score = 0;
        for (VkMemoryPropertyFlags w = want; w; w &= w - 1)
            score += (f & (w & -w)) ? 2 : 0;
        if (!(f & avoid))
            score += 1;
        if (score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    return best;
}

static const VkBufferUsageFlags buffer_usage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
    VK_BUFFER_USAGE_TRANSFER_DST_BIT;

static VkResult make_buffer(vk_state *s, VkDeviceSize size, VkBuffer *out)
{
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = buffer_usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    return s->fd.vkCreateBuffer(s->device, &bi, NULL, out);
}

static rayo_status pool_init(vk_state *s, vk_pool *pool, const char *name, uint32_t type_bits,
                             VkMemoryPropertyFlags need, VkMemoryPropertyFlags want,
                             VkMemoryPropertyFlags avoid)
{
    memset(pool, 0, sizeof *pool);
    pool->name = name;
    pool->block_size = VK_BLOCK_SIZE;
    int t = pick_type(&s->mem_props, type_bits, need, want, avoid);
    if (t < 0) {
        s->host->set_error(s->host, "vulkan: no %s memory type for storage buffers", name);
        return RAYO_E_UNSUPPORTED;
    }
    pool->type_index = (uint32_t)t;
    pool->flags = s->mem_props.memoryTypes[t].propertyFlags;
    pthread_mutex_init(&pool->lock, NULL);
    return RAYO_OK;
}

static void block_destroy(vk_state *s, vk_block *b)
{
    if (b->buffer)
        s->fd.vkDestroyBuffer(s->device, b->buffer, NULL);
    if (b->map)
        s->fd.vkUnmapMemory(s->device, b->memory);
    if (b->memory)
        s->fd.vkFreeMemory(s->device, b->memory, NULL);
    free(b->free);
    free(b);
}

static rayo_status block_create(vk_state *s, vk_pool *pool, VkDeviceSize size, vk_block **out)
{
    vk_block *b = calloc(1, sizeof *b);
    if (!b)
        return RAYO_E_NOMEM;
    b->size = size;
    b->pool = pool;
    VkResult r = make_buffer(s, size, &b->buffer);
    if (r != VK_SUCCESS)
        goto fail;
    VkMemoryRequirements req;
    s->fd.vkGetBufferMemoryRequirements(s->device, b->buffer, &req);
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = pool->type_index,
    };
    r = s->fd.vkAllocateMemory(s->device, &ai, NULL, &b->memory);
    if (r != VK_SUCCESS)
        goto fail;
    r = s->fd.vkBindBufferMemory(s->device, b->buffer, b->memory, 0);
    if (r != VK_SUCCESS)
        goto fail;
    if (pool->flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        void *p = NULL;
        r = s->fd.vkMapMemory(s->device, b->memory, 0, VK_WHOLE_SIZE, 0, &p);
        if (r != VK_SUCCESS)
            goto fail;
        b->map = p;
    }
    b->free = malloc(4 * sizeof *b->free);
    if (!b->free) {
        block_destroy(s, b);
        return RAYO_E_NOMEM;
    }
    b->free_cap = 4;
    b->free_count = 1;
    b->free[0] = (vk_range){0, size};
    *out = b;
    return RAYO_OK;
fail:
    block_destroy(s, b);
    s->host->set_error(s->host, "vulkan: allocating %llu bytes of %s memory: %s",
                       (unsigned long long)size, pool->name, vk_result_name(r));
    return vk_status_of(r);
}

/* First fit in one block; returns the offset or VK_WHOLE_SIZE. */
static VkDeviceSize block_take(vk_block *b, VkDeviceSize size)
{
    for (size_t i = 0; i < b->free_count; i++) {
        vk_range *f = &b->free[i];
        if (f->size < size)
            continue;
        VkDeviceSize off = f->offset;
        f->offset += size;
        f->size -= size;
        if (f->size == 0) {
            memmove(f, f + 1, (b->free_count - i - 1) * sizeof *f);
            b->free_count--;
        }
        b->used += size;
        return off;
    }
    return VK_WHOLE_SIZE;
}

/* Returns a range to a block, merged with its neighbours. */
static int block_give(vk_block *b, VkDeviceSize off, VkDeviceSize size)
{
    size_t i = 0;
    while (i < b->free_count && b->free[i].offset < off)
        i++;
    bool join_prev = i > 0 && b->free[i - 1].offset + b->free[i - 1].size == off;
    bool join_next = i < b->free_count && off + size == b->free[i].offset;
    b->used -= size;
    if (join_prev && join_next) {
        b->free[i - 1].size += size + b->free[i].size;
        memmove(&b->free[i], &b->free[i + 1], (b->free_count - i - 1) * sizeof *b->free);
        b->free_count--;
    } else if (join_prev) {
        b->free[i - 1].size += size;
    } else if (join_next) {
        b->free[i].offset = off;
        b->free[i].size += size;
    } else {
        if (b->free_count == b->free_cap) {
            vk_range *grown = realloc(b->free, 2 * b->free_cap * sizeof *grown);
            if (!grown)
                return -1;      /* the range is lost until the block is freed */
            b->free = grown;
            b->free_cap *= 2;
        }
        memmove(&b->free[i + 1], &b->free[i], (b->free_count - i) * sizeof *b->free);
        b->free[i] = (vk_range){off, size};
        b->free_count++;
    }
    return 0;
}

static void buf_init(vk_buf *buf, vk_block *b, VkDeviceSize off, VkDeviceSize size)
{
    buf->block = b;
    buf->offset = off;
    buf->size = size;
    buf->id = 0;
    atomic_init(&buf->writes, 0);
    atomic_init(&buf->device_written, false);
}

rayo_status vk_buf_alloc(vk_state *s, vk_pool *pool, VkDeviceSize bytes, vk_buf **out)
{
    VkDeviceSize size = round_up(bytes ? bytes : 4, VK_ALIGN);
    VkDeviceSize max_alloc = (VkDeviceSize)1 << 40;
    if (size > max_alloc) {
        s->host->set_error(s->host, "vulkan: %llu bytes is more than one allocation may hold",
                           (unsigned long long)bytes);
        return RAYO_E_NOMEM;
    }
    vk_buf *buf = malloc(sizeof *buf);
    if (!buf)
        return RAYO_E_NOMEM;
    pthread_mutex_lock(&pool->lock);
    for (vk_block *b = pool->blocks; b; b = b->next) {
        VkDeviceSize off = block_take(b, size);
        if (off != VK_WHOLE_SIZE) {
            pthread_mutex_unlock(&pool->lock);
            buf_init(buf, b, off, size);
            *out = buf;
            return RAYO_OK;
        }
    }
    vk_block *b = NULL;
    rayo_status st = block_create(s, pool, size > pool->block_size ? size : pool->block_size, &b);
    if (st != RAYO_OK) {
        pthread_mutex_unlock(&pool->lock);
        free(buf);
        return st;
    }
    b->next = pool->blocks;
    pool->blocks = b;
    VkDeviceSize off = block_take(b, size);
    pthread_mutex_unlock(&pool->lock);
    buf_init(buf, b, off, size);
    *out = buf;
    return RAYO_OK;
}

/* Frees empty blocks while the pool keeps more than VK_KEEP_EMPTY bytes of
 * them (called with the pool locked). */
static void pool_trim(vk_state *s, vk_pool *pool)
{
    VkDeviceSize empty = 0;
    for (vk_block *b = pool->blocks; b; b = b->next)
        if (b->used == 0)
            empty += b->size;
    for (vk_block **pp = &pool->blocks; *pp && empty > VK_KEEP_EMPTY;) {
        vk_block *b = *pp;
        if (b->used == 0) {
            *pp = b->next;
            empty -= b->size;
            block_destroy(s, b);
        } else {
            pp = &b->next;
        }
    }
}

void vk_buf_free(vk_state *s, vk_buf *buf)
{
    if (!buf)
        return;
    vk_pool *pool = buf->block->pool;
    pthread_mutex_lock(&pool->lock);
    block_give(buf->block, buf->offset, buf->size);
    if (buf->block->used == 0)
        pool_trim(s, pool);
    pthread_mutex_unlock(&pool->lock);
    free(buf);
}

void *vk_buf_map(const vk_buf *buf)
{
    return buf->block->map ? buf->block->map + buf->offset : NULL;
}

/* A discrete GPU's device memory that the host may map (a PCIe BAR window):
 * an application's small buffers live there ([backend.vulkan] mapped_small),
 * so that writing a decode step's token id or reading its result is a
 * memcpy, not a copy through a staging buffer and a submission of its own
 * (20-60 us each on an H200).  Small blocks: the window may be small. */
static void init_mapped_pool(vk_state *s, uint32_t type_bits, VkMemoryPropertyFlags visible)
{
    const char *no = s->host->config(s->host, "mapped_small");
    if (s->unified || (no && !strcmp(no, "no")))
        return;
    VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | visible;
    if (pick_type(&s->mem_props, type_bits, need, 0, 0) < 0)
        return; /* (pool_init would say so as an error) */
    pool_init(s, &s->mapped_pool, "mapped device", type_bits, need, 0, 0);
    s->mapped_pool.block_size = MAPPED_BLOCK_SIZE;
    s->mapped_small = true;
}

rayo_status vk_memory_init(vk_state *s)
{
    s->fi.vkGetPhysicalDeviceMemoryProperties(s->phys, &s->mem_props);
    /* which memory types a storage buffer may use */
    VkBuffer probe;
    VkResult r = make_buffer(s, 4096, &probe);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkCreateBuffer");
    VkMemoryRequirements req;
    s->fd.vkGetBufferMemoryRequirements(s->device, probe, &req);
    s->fd.vkDestroyBuffer(s->device, probe, NULL);

    const VkMemoryPropertyFlags visible =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    /* device memory: device-local, preferably not host-visible (on a discrete
     * GPU the host-visible window is small); staging: host-visible and
     * coherent, cached for fast read-back. */
    rayo_status st = pool_init(s, &s->device_pool, "device", req.memoryTypeBits,
                               VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    if (st == RAYO_OK)
        st = pool_init(s, &s->staging_pool, "staging", req.memoryTypeBits, visible,
                       VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
    if (st != RAYO_OK)
        return st;
    s->unified = (s->device_pool.flags & visible) == visible;
    init_mapped_pool(s, req.memoryTypeBits, visible);
    return vk_buf_alloc(s, &s->device_pool, 256, &s->dummy);
}

rayo_status vk_buf_alloc_for_app(vk_state *s, VkDeviceSize bytes, vk_buf **out)
{
    if (s->mapped_small && bytes <= MAPPED_SMALL_BYTES && vk_buf_alloc(s, &s->mapped_pool, bytes, out) == RAYO_OK)
        return RAYO_OK;
    return vk_buf_alloc(s, &s->device_pool, bytes, out); /* also where the window is full */
}

static void pool_fini(vk_state *s, vk_pool *pool)
{
    while (pool->blocks) {
        vk_block *b = pool->blocks;
        pool->blocks = b->next;
        block_destroy(s, b);
    }
    pthread_mutex_destroy(&pool->lock);
}

void vk_memory_fini(vk_state *s)
{
    if (s->dummy)
        vk_buf_free(s, s->dummy);
    s->dummy = NULL;
    pool_fini(s, &s->device_pool);
    pool_fini(s, &s->staging_pool);
    if (s->mapped_small)
        pool_fini(s, &s->mapped_pool);
    s->mapped_small = false;
}
