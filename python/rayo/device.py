# SPDX-License-Identifier: MIT
"""Device buffers and batches: data that stays on a backend's device between
ops, and ops recorded once and submitted together."""
import ctypes

import numpy as np

from . import _lib
from ._lib import Handle, check, lib
from .dtypes import dtype_id


class Buffer(Handle):
    """rayo_buffer: nbytes of a backend's memory (host memory on CPU backends)."""
    _free = lib.rayo_buffer_destroy

    def __init__(self, ctx, nbytes, backend=None):
        handle = ctypes.c_void_p()
        check(lib.rayo_buffer_create(ctx._live(), backend.encode() if backend else None, nbytes,
                                     ctypes.byref(handle)))
        self.handle, self.ctx = handle.value, ctx

    @property
    def size(self):
        return lib.rayo_buffer_size(self._live())

    @property
    def backend(self):
        return lib.rayo_buffer_backend(self._live()).decode()

    def write(self, array, offset=0):
        """Copies a numpy array's bytes in at byte offset."""
        array = np.ascontiguousarray(array)
        check(lib.rayo_buffer_write(self._live(), offset, array.ctypes.data, array.nbytes))

    def set_constant(self):
        """rayo_buffer_set_constant: the contents are final (later writes fail);
        a backend may keep prepared copies of weights read from it."""
        check(lib.rayo_buffer_set_constant(self._live()))

    def read(self, shape, dtype=np.float32, offset=0):
        """A new numpy array of shape and dtype, read from byte offset."""
        out = np.empty(shape, dtype=dtype)
        check(lib.rayo_buffer_read(self._live(), offset, out.ctypes.data, out.nbytes))
        return out


def _operand(x):
    """A Buffer or (Buffer, byte offset) as a rayo_operand."""
    if x is None:
        return _lib.Operand()
    buf, offset = x if isinstance(x, tuple) else (x, 0)
    return _lib.Operand(buf=buf._live(), offset=offset)


class Batch(Handle):
    """rayo_batch: ops on buffers of one backend, run by one submission."""
    _free = lib.rayo_batch_destroy

    def __init__(self, ctx, backend=None):
        handle = ctypes.c_void_p()
        check(lib.rayo_batch_create(ctx._live(), backend.encode() if backend else None,
                                    ctypes.byref(handle)))
        self.handle, self.ctx = handle.value, ctx
        self._keep = []  # buffers recorded: alive at least as long as the batch object

    def record(self, op, *, a=None, b=None, c=None, y=None, dtypes=(), precision=None,
               step_bytes=(0, 0, 0, 0), step_kv_length=False, **fields):
        """Records op (by name): a, b, c, y are Buffers or (Buffer, byte offset);
        dtypes names the dtypes of (a, b, c, y), e.g. ("f32", "q4_k");
        step_bytes: how far each of a, b, c, y moves per step (set_step);
        step_kv_length: attention attends to n_kv + step keys;
        the other fields are rayo_batch_call's (m, n, k, alpha, beta, flags, lda...)."""
        info = lib.rayo_op_by_name(op.encode())
        if not info:
            raise ValueError(f"rayo: no op named {op!r}")
        word = 0
        for i, name in enumerate(dtypes):
            word |= dtype_id(name) << (8 * i)
        call = _lib.BatchCall(struct_size=ctypes.sizeof(_lib.BatchCall), op=info.contents.id,
                              a=_operand(a), b=_operand(b), c=_operand(c), y=_operand(y),
                              dtypes=word, precision=_lib.PRECISIONS[precision],
                              step_bytes=(ctypes.c_size_t * 4)(*step_bytes),
                              step_flags=_lib.STEP_KV_LENGTH if step_kv_length else 0, **fields)
        check(lib.rayo_batch_record(self._live(), ctypes.byref(call)))
        self._keep += [x for x in (a, b, c, y) if x is not None]

    def set_step(self, step):
        """The step the next submits run at (replay: offsets move by step_bytes per step)."""
        check(lib.rayo_batch_set_step(self._live(), step))

    def submit(self):
        check(lib.rayo_batch_submit(self._live()))

    def wait(self, timeout=None):
        """Waits for the submitted ops; timeout in seconds (None: forever)."""
        ns = _lib.UINT64_MAX if timeout is None else int(timeout * 1e9)
        check(lib.rayo_batch_wait(self._live(), ns))

    def run(self):
        """submit, then wait."""
        self.submit()
        self.wait()

