/* SPDX-License-Identifier: MIT */
/* vk-submit.c - command contexts: recording primitives (dispatch, copy,
 * temporaries), submission and completion.  It knows nothing of ops: the
 * op recorders (vk-ops.c) and the memory API (vk-batches.c) sit above it.
 *
 * A context (vk_ctx) is a command buffer with its descriptor pools and the
 * temporaries its ops need.  A batch is one context; a host-memory call uses
 * one for its single submission.  Contexts are recycled, not recreated.
 *
 * Ordering: every command buffer starts with a full memory barrier (whose
 * first scope covers everything submitted before on the queue) and each
 * dispatch or copy is preceded by one when any command came before it in
 * the context, so ops run in recording order and batches in submission
 * order; except that an op whose accesses conflict with none of those of
 * the ops since the last barrier goes without it (vk_ctx_independent).  Completion is a timeline semaphore: each
 * submission signals the next value, and waiting for a context is waiting
 * for its value.
 */
#include "vk-internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VK_SETS_PER_POOL 64
#define SPIN_NS 200000u          /* poll a submission this long before blocking */

static void barrier(vk_state *s, VkCommandBuffer cmd, VkPipelineStageFlags dst_stage,
                    VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = dst_access,
    };
    s->fd.vkCmdPipelineBarrier(cmd,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

static const VkAccessFlags device_access =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
static const VkPipelineStageFlags device_stages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

/* Before a command: the barrier owed by the ones before it, unless the op
 * was found independent of them (then only its first command skips it). */
static void settle(vk_state *s, vk_ctx *cx)
{
    if (cx->owed && !cx->skip) {
        barrier(s, cx->cmd, device_stages, device_access);
        cx->pending_count = 0;
        cx->pending_known = true;
    }
    cx->skip = 0;
    cx->owed = 1;   /* the command about to be recorded */
}

static bool conflict(const vk_span *a, const vk_span *b)
{
    return a->buffer == b->buffer && a->start < b->end && b->start < a->end && (a->write || b->write);
}

void vk_ctx_independent(vk_ctx *cx, const vk_span *spans, size_t n)
{
    if (!cx->owed || !cx->pending_known)
        return;
    for (size_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < cx->pending_count; j++)
            if (conflict(&spans[i], &cx->pending[j]))
                return;
    cx->skip = 1;
}

void vk_ctx_accessed(vk_ctx *cx, const vk_span *spans, size_t n, bool tracked)
{
    cx->skip = 0;   /* an op that recorded nothing leaves no skip behind */
    if (!tracked || cx->pending_count + n > VK_PENDING) {
        cx->pending_known = false;
        return;
    }
    for (size_t i = 0; i < n; i++)
        cx->pending[cx->pending_count++] = spans[i];
}

static rayo_status add_desc_pool(vk_state *s, vk_ctx *cx)
{
    VkDescriptorPool *grown = realloc(cx->desc_pools, (cx->desc_pool_count + 1) * sizeof *grown);
    if (!grown)
        return RAYO_E_NOMEM;
    cx->desc_pools = grown;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, s->bindings * VK_SETS_PER_POOL};
    VkDescriptorPoolCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = VK_SETS_PER_POOL,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    VkResult r = s->fd.vkCreateDescriptorPool(s->device, &ci, NULL, &cx->desc_pools[cx->desc_pool_count]);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkCreateDescriptorPool");
    cx->desc_pool_count++;
    return RAYO_OK;
}

static void ctx_destroy(vk_state *s, vk_ctx *cx)
{
    for (size_t i = 0; i < cx->desc_pool_count; i++)
        s->fd.vkDestroyDescriptorPool(s->device, cx->desc_pools[i], NULL);
    free(cx->desc_pools);
    if (cx->cmd_pool)
        s->fd.vkDestroyCommandPool(s->device, cx->cmd_pool, NULL);
    free(cx->temps);
    free(cx->copies);
    vk_profile_free(s, cx);
    free(cx);
}

static rayo_status ctx_create(vk_state *s, vk_ctx **out)
{
    vk_ctx *cx = calloc(1, sizeof *cx);
    if (!cx)
        return RAYO_E_NOMEM;
    VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = s->queue_family,
    };
    VkResult r = s->fd.vkCreateCommandPool(s->device, &pi, NULL, &cx->cmd_pool);
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo ai = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = cx->cmd_pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        r = s->fd.vkAllocateCommandBuffers(s->device, &ai, &cx->cmd);
    }
    if (r != VK_SUCCESS) {
        ctx_destroy(s, cx);
        return vk_fail(s, r, "creating a command buffer");
    }
    rayo_status st = add_desc_pool(s, cx);
    if (st != RAYO_OK) {
        ctx_destroy(s, cx);
        return st;
    }
    *out = cx;
    return RAYO_OK;
}

rayo_status vk_ctx_acquire(vk_state *s, vk_ctx **out)
{
    if (atomic_load(&s->lost)) {
        s->host->set_error(s->host, "vulkan: the device was lost");
        return RAYO_E_DEVICE_LOST;
    }
    pthread_mutex_lock(&s->ctx_lock);
    vk_ctx *cx = s->free_ctx;
    if (cx)
        s->free_ctx = cx->next;
    pthread_mutex_unlock(&s->ctx_lock);
    if (!cx) {
        rayo_status st = ctx_create(s, &cx);
        if (st != RAYO_OK)
            return st;
    }
    cx->next = NULL;
    cx->submitted = 0;
    cx->error = RAYO_OK;
    cx->ahead = false;
    cx->validation_mark = atomic_load(&s->validation_messages);
    cx->ended = 0;
    cx->owed = cx->skip = cx->depth = 0;
    cx->pending_count = 0;
    cx->pending_known = true;
    cx->copy_count = 0;
    /* not one-time: a replayed batch submits its command buffers again */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult r = s->fd.vkBeginCommandBuffer(cx->cmd, &bi);
    if (r != VK_SUCCESS) {
        ctx_destroy(s, cx);
        return vk_fail(s, r, "vkBeginCommandBuffer");
    }
    /* order after everything submitted before (batches, host writes) */
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                         VK_ACCESS_HOST_WRITE_BIT,
        .dstAccessMask = device_access,
    };
    s->fd.vkCmdPipelineBarrier(cx->cmd,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
        VK_PIPELINE_STAGE_HOST_BIT,
        device_stages, 0, 1, &mb, 0, NULL, 0, NULL);
    *out = cx;
    return RAYO_OK;
}

rayo_status vk_bind(vk_state *s, const vk_buf *buf, VkDeviceSize off, VkDeviceSize bytes,
                    vk_binding *out)
{
    VkDeviceSize align = s->props.limits.minStorageBufferOffsetAlignment;
    if (align < 4)
        align = 4;
    VkDeviceSize abs_off = buf->offset + off;
    VkDeviceSize start = abs_off / align * align;
    VkDeviceSize range = buf->block->size - start;
    if (range > s->props.limits.maxStorageBufferRange)
        range = s->props.limits.maxStorageBufferRange;
    range &= ~(VkDeviceSize)3;
    if (abs_off + bytes > start + range || (abs_off - start) / 4 > UINT32_MAX) {
        s->host->set_error(s->host, "vulkan: an operand of %llu bytes exceeds what a "
                           "storage buffer may address (%u bytes) on this device",
                           (unsigned long long)bytes, s->props.limits.maxStorageBufferRange);
        return RAYO_E_UNSUPPORTED;
    }
    out->buffer = buf->block->buffer;
    out->buf = buf;
    out->offset = start;
    out->range = range;
    out->word_offset = (uint32_t)((abs_off - start) / 4);
    out->byte_offset = (uint32_t)(abs_off - start);
    return RAYO_OK;
}

static rayo_status alloc_set(vk_state *s, vk_ctx *cx, VkDescriptorSet *set)
{
    VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = cx->desc_pools[cx->desc_pool_count - 1],
        .descriptorSetCount = 1,
        .pSetLayouts = &s->set_layout,
    };
    VkResult r = s->fd.vkAllocateDescriptorSets(s->device, &ai, set);
    if (r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL) {
        rayo_status st = add_desc_pool(s, cx);
        if (st != RAYO_OK)
            return st;
        ai.descriptorPool = cx->desc_pools[cx->desc_pool_count - 1];
        r = s->fd.vkAllocateDescriptorSets(s->device, &ai, set);
    }
    return r == VK_SUCCESS ? RAYO_OK : vk_fail(s, r, "vkAllocateDescriptorSets");
}

/* The descriptor writes of a dispatch's bindings (NULL: the dummy buffer). */
static void binding_writes(const vk_state *s, const vk_binding *const bind[VK_BINDINGS], VkDescriptorSet set,
                           VkDescriptorBufferInfo info[VK_BINDINGS], VkWriteDescriptorSet writes[VK_BINDINGS])
{
    for (uint32_t i = 0; i < s->bindings; i++) {
        if (bind[i])
            info[i] = (VkDescriptorBufferInfo){bind[i]->buffer, bind[i]->offset, bind[i]->range};
        else
            info[i] = (VkDescriptorBufferInfo){s->dummy->block->buffer, s->dummy->offset, s->dummy->size};
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &info[i],
        };
    }
}

/* The slots a shader may write: y, s, e and f (every shader declares a, b,
 * c and d readonly).  Every dispatch of the plugin comes through here, so
 * a buffer never marked was never written by the device, which is what a
 * kept weight copy relies on (vk-weight-copies.c). */
static const bool slot_written[VK_BINDINGS] = {[3] = true, [4] = true, [6] = true, [7] = true};

static void mark_written(const vk_binding *const bind[VK_BINDINGS])
{
    for (int i = 0; i < VK_BINDINGS; i++)
        if (slot_written[i] && bind[i] && bind[i]->buf)
            atomic_store(&((vk_buf *)bind[i]->buf)->device_written, true);
}

rayo_status vk_ctx_dispatch(vk_state *s, vk_ctx *cx, VkPipeline pipeline,
                            const vk_binding *const bind[VK_BINDINGS], const vk_push *pc,
                            uint32_t gx, uint32_t gy, uint32_t gz)
{
    if (cx->error != RAYO_OK)
        return cx->error;
    mark_written(bind);
    if (cx->ahead)
        return RAYO_OK; /* never submitted: its pipelines were all it was for */
    VkDescriptorSet set = VK_NULL_HANDLE;
    rayo_status st = s->push_descriptors ? RAYO_OK : alloc_set(s, cx, &set);
    if (st != RAYO_OK)
        return cx->error = st;
    VkDescriptorBufferInfo info[VK_BINDINGS];
    VkWriteDescriptorSet writes[VK_BINDINGS];
    binding_writes(s, bind, set, info, writes);
    settle(s, cx);
    s->fd.vkCmdBindPipeline(cx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    if (s->push_descriptors) {
        s->fd.vkCmdPushDescriptorSetKHR(cx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline_layout, 0,
                                        s->bindings, writes);
    } else {
        s->fd.vkUpdateDescriptorSets(s->device, s->bindings, writes, 0, NULL);
        s->fd.vkCmdBindDescriptorSets(cx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline_layout,
                                      0, 1, &set, 0, NULL);
    }
    s->fd.vkCmdPushConstants(cx->cmd, s->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             sizeof *pc, pc);
    s->fd.vkCmdDispatch(cx->cmd, gx, gy, gz);
    return RAYO_OK;
}

void vk_ctx_copy(vk_state *s, vk_ctx *cx, const vk_buf *src, VkDeviceSize src_off,
                 const vk_buf *dst, VkDeviceSize dst_off, VkDeviceSize bytes)
{
    if (bytes == 0)
        return;
    VkBufferCopy region = {src->offset + src_off, dst->offset + dst_off, bytes};
    settle(s, cx);
    cx->pending_known = false; /* a copy's bytes are not tracked: the next op waits for it */
    s->fd.vkCmdCopyBuffer(cx->cmd, src->block->buffer, dst->block->buffer, 1, &region);
}

rayo_status vk_ctx_temp(vk_state *s, vk_ctx *cx, vk_pool *pool, VkDeviceSize bytes, vk_buf **out)
{
    if (cx->temp_count == cx->temp_cap) {
        size_t cap = cx->temp_cap ? 2 * cx->temp_cap : 8;
        vk_buf **grown = realloc(cx->temps, cap * sizeof *grown);
        if (!grown)
            return cx->error = RAYO_E_NOMEM;
        cx->temps = grown;
        cx->temp_cap = cap;
    }
    rayo_status st = vk_buf_alloc(s, pool, bytes, out);
    if (st != RAYO_OK)
        return cx->error = st;
    cx->temps[cx->temp_count++] = *out;
    return RAYO_OK;
}

rayo_status vk_ctx_upload_temp(vk_state *s, vk_ctx *cx, VkDeviceSize bytes, vk_buf **out, void **host)
{
    rayo_status st = vk_ctx_temp(s, cx, &s->device_pool, bytes, out);
    if (st != RAYO_OK || (*host = vk_buf_map(*out)) != NULL)
        return st;
    vk_buf *stage;
    st = vk_ctx_temp(s, cx, &s->staging_pool, (*out)->size, &stage);
    if (st != RAYO_OK)
        return st;
    vk_ctx_copy(s, cx, stage, 0, *out, 0, (*out)->size);
    *host = vk_buf_map(stage);
    return RAYO_OK;
}

rayo_status vk_ctx_end(vk_state *s, vk_ctx *cx, bool last)
{
    if (cx->error != RAYO_OK || cx->ended)
        return cx->error;
    /* results written by the device become visible to mapped host reads
     * (a context after it in the submission starts with a full barrier) */
    if (last)
        barrier(s, cx->cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    VkResult r = s->fd.vkEndCommandBuffer(cx->cmd);
    if (r != VK_SUCCESS)
        return cx->error = vk_fail(s, r, "vkEndCommandBuffer");
    cx->ended = 1;
    return RAYO_OK;
}

/* Queues the ended command buffers of cxs[0..n) in one submission that
 * signals the next timeline value; each context then waits for that value. */
static rayo_status queue_submit(vk_state *s, vk_ctx *const *cxs, size_t n)
{
    VkCommandBuffer *cmds = malloc(n * sizeof *cmds);
    if (!cmds)
        return RAYO_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        cmds[i] = cxs[i]->cmd;
        if (cxs[i]->fault) /* a host write before vkQueueSubmit is visible to the device */
            *(volatile uint32_t *)vk_buf_map(cxs[i]->fault) = 0;
    }
    pthread_mutex_lock(&s->queue_lock);
    uint64_t value = s->timeline_value + 1;
    VkTimelineSemaphoreSubmitInfo ti = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &value,
    };
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = &ti,
        .commandBufferCount = (uint32_t)n,
        .pCommandBuffers = cmds,
        .signalSemaphoreCount = 1,
        .pSignalSemaphores = &s->timeline,
    };
    VkResult r = s->fd.vkQueueSubmit(s->queue, 1, &si, VK_NULL_HANDLE);
    if (r == VK_SUCCESS)
        s->timeline_value = value;
    pthread_mutex_unlock(&s->queue_lock);
    free(cmds);
    if (r != VK_SUCCESS)
        return vk_fail(s, r, "vkQueueSubmit");
    for (size_t i = 0; i < n; i++) {
        cxs[i]->signal = value;
        cxs[i]->submitted = 1;
    }
    return RAYO_OK;
}

rayo_status vk_ctx_submit_all(vk_state *s, vk_ctx *const *cxs, size_t n)
{
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < n && st == RAYO_OK; i++)
        if (!vk_copies_fresh(s, cxs[i])) { /* vk-batches.c records such a batch again first */
            s->host->set_error(s->host, "vulkan: a recording reads a weight's f16 copy that a write made stale");
            st = RAYO_E_STATE;
        }
    for (size_t i = 0; i < n && st == RAYO_OK; i++)
        st = vk_ctx_end(s, cxs[i], i + 1 == n);
    if (st == RAYO_OK)
        st = queue_submit(s, cxs, n);
    for (size_t i = 0; i < n && st != RAYO_OK; i++)
        if (cxs[i]->error == RAYO_OK)
            cxs[i]->error = st;
    return st;
}

rayo_status vk_ctx_submit(vk_state *s, vk_ctx *cx)
{
    return vk_ctx_submit_all(s, &cx, 1);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static rayo_status wait_value(vk_state *s, uint64_t value, uint64_t timeout_ns)
{
    /* Poll the counter for a short while first: most submissions of a
     * host call finish within tens of microseconds, and waking up from a
     * blocking wait costs about as much again. */
    if (timeout_ns >= SPIN_NS) {
        double end = seconds_now() + SPIN_NS * 1e-9;
        uint64_t reached = 0;
        do {
            VkResult r = s->fd.vkGetSemaphoreCounterValue(s->device, s->timeline, &reached);
            if (r != VK_SUCCESS)
                return vk_fail(s, r, "vkGetSemaphoreCounterValue");
            if (reached >= value)
                return RAYO_OK;
        } while (seconds_now() < end);
    }
    VkSemaphoreWaitInfo wi = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = 1,
        .pSemaphores = &s->timeline,
        .pValues = &value,
    };
    VkResult r = s->fd.vkWaitSemaphores(s->device, &wi, timeout_ns);
    if (r == VK_TIMEOUT) {
        s->host->set_error(s->host, "vulkan: the batch did not complete in %llu ns",
                           (unsigned long long)timeout_ns);
        return RAYO_E_TIMEOUT;
    }
    return r == VK_SUCCESS ? RAYO_OK : vk_fail(s, r, "vkWaitSemaphores");
}

rayo_status vk_ctx_wait(vk_state *s, vk_ctx *cx, uint64_t timeout_ns)
{
    if (cx->error != RAYO_OK)
        return cx->error;
    if (!cx->submitted) {
        s->host->set_error(s->host, "vulkan: waiting for a batch that was not submitted");
        return RAYO_E_STATE;
    }
    rayo_status st = wait_value(s, cx->signal, timeout_ns);
    if (st != RAYO_OK)
        return st;     /* a timeout is not the batch's error: it may be waited for again */
    unsigned long seen = atomic_load(&s->validation_messages);
    if (seen != cx->validation_mark) {
        s->host->set_error(s->host, "vulkan: the validation layer reported %lu message(s)",
                           (unsigned long)(seen - cx->validation_mark));
        return cx->error = RAYO_E_BACKEND;
    }
    if (cx->fault && *(volatile uint32_t *)vk_buf_map(cx->fault)) {
        s->host->set_error(s->host, "get_rows: an index of the batch is outside the table "
                                    "(no row of that call was written)");
        return RAYO_E_INVALID;
    }
    return RAYO_OK;
}

rayo_status vk_queue_drain(vk_state *s)
{
    pthread_mutex_lock(&s->queue_lock);
    uint64_t value = s->timeline_value;
    pthread_mutex_unlock(&s->queue_lock);
    return value ? wait_value(s, value, UINT64_MAX) : RAYO_OK;
}

void vk_ctx_release(vk_state *s, vk_ctx *cx)
{
    if (!cx)
        return;
    /* resetting the pool below also resets a command buffer still recording */
    if (cx->submitted)
        wait_value(s, cx->signal, UINT64_MAX);
    for (size_t i = 0; i < cx->temp_count; i++)
        vk_buf_free(s, cx->temps[i]);
    cx->temp_count = 0;
    cx->mm_scratch = cx->mm_index = cx->fault = NULL;
    cx->prof_count = 0;       /* a host call's use of the context times nothing */
    for (size_t i = 0; i < cx->desc_pool_count; i++)
        s->fd.vkResetDescriptorPool(s->device, cx->desc_pools[i], 0);
    /* keep the first descriptor pool; a batch that needed more gets them again */
    for (size_t i = 1; i < cx->desc_pool_count; i++)
        s->fd.vkDestroyDescriptorPool(s->device, cx->desc_pools[i], NULL);
    cx->desc_pool_count = cx->desc_pool_count ? 1 : 0;
    s->fd.vkResetCommandPool(s->device, cx->cmd_pool, 0);
    pthread_mutex_lock(&s->ctx_lock);
    cx->next = s->free_ctx;
    s->free_ctx = cx;
    pthread_mutex_unlock(&s->ctx_lock);
}

void vk_ctx_destroy_all(vk_state *s)
{
    while (s->free_ctx) {
        vk_ctx *cx = s->free_ctx;
        s->free_ctx = cx->next;
        ctx_destroy(s, cx);
    }
}
