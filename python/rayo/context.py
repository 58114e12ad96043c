# SPDX-License-Identifier: MIT
"""Context: an open rayo context, its ops (one method per op of the library's
op list), device buffers, batches and introspection."""
import ctypes
import functools

from . import _lib, ops
from ._lib import Handle, check, lib
from .device import Batch, Buffer


class Context(Handle):
    """rayo_open / rayo_close.  settings: rayo.conf text applied last (the
    application's word); config_files / environment: read them or not.
    close(): buffers and batches still open keep only their handles."""
    _free = lib.rayo_close

    def __init__(self, settings=None, config_files=True, environment=True, allow_no_backend=False):
        opts = _lib.Options(struct_size=ctypes.sizeof(_lib.Options),
                            settings=settings.encode() if settings else None,
                            no_config_files=not config_files, no_environment=not environment,
                            allow_no_backend=allow_no_backend)
        handle = ctypes.c_void_p()
        check(lib.rayo_open(ctypes.byref(handle), ctypes.byref(opts)))
        self.handle = handle.value

    # ---- any op through rayo_run --------------------------------------------
    def run(self, op, backend=None, **fields):
        """One raw call: op by name, fields of rayo_call (a, b, c, y as numpy
        arrays); backend runs it on that backend only (rayo_run_on)."""
        info = _op_info(op)
        call = _lib.Call(struct_size=ctypes.sizeof(_lib.Call), op=info.id,
                         **{k: ops.ptr(v) if k in "abcy" else v for k, v in fields.items()})
        if backend is None:
            check(lib.rayo_run(self._live(), ctypes.byref(call)))
        else:
            check(lib.rayo_run_on(self._live(), backend.encode(), ctypes.byref(call)))

    # ---- device memory ------------------------------------------------------
    def buffer(self, nbytes, backend=None):
        """A device buffer of nbytes on backend (None: the library's choice)."""
        return Buffer(self, nbytes, backend)

    def batch(self, backend=None):
        """A batch of ops on buffers of one backend."""
        return Batch(self, backend)

    # ---- introspection ------------------------------------------------------
    def backends(self):
        """One dict per plugin file found: name, path, version, status, reason, device..."""
        out = []
        for i in range(lib.rayo_backend_count(self._live())):
            info = _lib.BackendInfo(struct_size=ctypes.sizeof(_lib.BackendInfo))
            check(lib.rayo_backend_get(self.handle, i, ctypes.byref(info)))
            out.append({"name": _text(info.name), "path": _text(info.path),
                        "version": _text(info.version), "abi": (info.abi_major, info.abi_minor),
                        "status": _lib.BACKEND_STATUS[info.status], "reason": _text(info.reason),
                        "device": _text(info.device),
                        "device_type": _lib.DEVICE_TYPES[info.device_type],
                        "ops": info.op_count})
        return out

    def backend_for(self, op, size, dtypes=0):
        """The backend a call of op at this work size would go to first, or None."""
        name = lib.rayo_backend_for(self._live(), _op_info(op).id, dtypes, size)
        return _text(name) if name else None

    def config_files(self):
        """(path, status) of each configuration file considered, in order."""
        out = []
        for i in range(lib.rayo_config_file_count(self._live())):
            status = ctypes.c_char_p()
            path = lib.rayo_config_file(self.handle, i, ctypes.byref(status))
            out.append((_text(path), _text(status.value)))
        return out

    @property
    def threads(self):
        return lib.rayo_thread_count(self._live())

    @property
    def plugin_search_path(self):
        return _text(lib.rayo_plugin_search_path(self._live()))


def _text(b):
    return b.decode(errors="replace") if b else ""


def _op_info(name):
    info = lib.rayo_op_by_name(name.encode())
    if not info:
        raise ValueError(f"rayo: no op named {name!r}")
    return info.contents


def op_list():
    """(name, signature, summary) of every op of the library's op list."""
    out = []
    for i in range(lib.rayo_op_count()):
        info = lib.rayo_op_at(i).contents
        out.append((info.name.decode(), _lib.SIGNATURES[info.sig], info.summary.decode()))
    return out


def _add_op_methods():
    """One Context method per op of the library, from its signature class."""
    for i in range(lib.rayo_op_count()):
        info = lib.rayo_op_at(i).contents
        impl = ops.BY_SIGNATURE[_lib.SIGNATURES[info.sig]]
        name, op_id = info.name.decode(), info.id

        def method(self, *args, _impl=impl, _id=op_id, **kwargs):
            self._live()
            return _impl(self, _id, *args, **kwargs)
        functools.update_wrapper(method, impl, assigned=("__module__",))
        method.__name__ = method.__qualname__ = name
        method.__doc__ = f"{info.summary.decode()}\n\n{impl.__doc__ or ''}".strip()
        setattr(Context, name, method)


_add_op_methods()
