# SPDX-License-Identifier: MIT
"""Finding librayo and declaring its C API for ctypes.

The structs and enums below mirror core/rayo.h (ABI 1): they are the part of
the package that follows the C header; python/tests call through each of them
and check the results against float64 references.
"""
import ctypes
import ctypes.util
import os

__all__ = ["lib", "library_path", "RayoError", "check", "Handle"]

# Where the package sits in a source tree: python/rayo/_lib.py.
_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _candidates():
    """Library files to try, in order: RAYO_LIBRARY, the build tree, the system."""
    env = os.environ.get("RAYO_LIBRARY")
    if env:
        return [env]  # an explicit choice is never silently replaced
    found = [os.path.join(_SOURCE_ROOT, "build", "core", ".libs", "librayo.so.0")]
    system = ctypes.util.find_library("rayo")
    found.append(system or "librayo.so.0")
    return found


def _load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: not found")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(str(e))
    raise ImportError("rayo: cannot load librayo (set RAYO_LIBRARY to its path): " + "; ".join(errors))


# ---- structs of rayo.h -------------------------------------------------------
c_size = ctypes.c_size_t
c_str = ctypes.c_char_p
c_void = ctypes.c_void_p


def _call_fields(operand):
    """The fields of rayo_call (operand: a pointer) and rayo_batch_call (a rayo_operand)."""
    u32 = ctypes.c_uint32
    return ([("struct_size", u32), ("op", u32), ("flags", u32), ("dtypes", u32),
             ("m", c_size), ("n", c_size), ("k", c_size), ("alpha", ctypes.c_float),
             ("beta", ctypes.c_float)] + [(x, operand) for x in "abcy"] +
            [(ld, c_size) for ld in ("lda", "ldb", "ldc", "ldy")] +
            [("precision", u32), ("reserved", u32), ("params", c_void)])


class Call(ctypes.Structure):
    """rayo_call"""
    _fields_ = _call_fields(c_void)


class Operand(ctypes.Structure):
    """rayo_operand: a buffer and a byte offset"""
    _fields_ = [("buf", c_void), ("offset", c_size)]


class BatchCall(ctypes.Structure):
    """rayo_batch_call (with the replay fields of ABI 1.1)"""
    _fields_ = _call_fields(Operand) + [("step_bytes", c_size * 4), ("step_flags", ctypes.c_uint32),
                                        ("reserved2", ctypes.c_uint32)]


class OpInfo(ctypes.Structure):
    """rayo_op_info"""
    _fields_ = [("struct_size", c_size), ("id", ctypes.c_int), ("name", c_str), ("sig", ctypes.c_int),
                ("tol_rel", ctypes.c_double), ("tol_abs", ctypes.c_double), ("scale", ctypes.c_int),
                ("summary", c_str)]


class BackendInfo(ctypes.Structure):
    """rayo_backend_info"""
    _fields_ = [("struct_size", c_size), ("name", c_str), ("path", c_str), ("version", c_str),
                ("abi_major", ctypes.c_uint), ("abi_minor", ctypes.c_uint), ("status", ctypes.c_int),
                ("reason", c_str), ("device", c_str), ("device_type", ctypes.c_int),
                ("device_count", c_size), ("rank", ctypes.c_uint), ("op_count", c_size),
                ("device_flags", ctypes.c_uint32)]


class Options(ctypes.Structure):
    """rayo_options"""
    _fields_ = [("struct_size", c_size), ("settings", c_str), ("no_config_files", ctypes.c_int),
                ("no_environment", ctypes.c_int), ("sysconf_dir", c_str), ("log", c_void),
                ("log_user", c_void), ("allow_no_backend", ctypes.c_int), ("vendor_conf_dir", c_str)]


class RopeParams(ctypes.Structure):
    """rayo_rope_params"""
    _fields_ = [("struct_size", c_size), ("mode", ctypes.c_int), ("rot_dims", ctypes.c_uint32),
                ("freq_base", ctypes.c_float), ("freq_scale", ctypes.c_float),
                ("n_heads", c_size), ("head_dim", c_size),
                ("head_stride_x", c_size), ("head_stride_y", c_size)]


class AttentionParams(ctypes.Structure):
    """rayo_attention_params"""
    _fields_ = [("struct_size", c_size), ("flags", ctypes.c_uint32), ("kv_dtype", ctypes.c_int),
                ("n_q", c_size), ("n_kv", c_size), ("n_heads", c_size), ("n_kv_heads", c_size),
                ("head_dim", c_size), ("scale", ctypes.c_float)] + \
        [(name, c_size) for name in ("q_token", "q_head", "k_token", "k_head",
                                     "v_token", "v_head", "o_token", "o_head")]


# rayo_op_sig, in the order of rayo.h.
SIGNATURES = ("binary", "unary", "unary_p", "unary_p2", "axpy", "reduce", "reduce2", "argreduce",
              "rows", "norm", "matmul", "gemv", "transpose", "bias_act", "convert", "get_rows",
              "rope", "attention", "glu")
# rayo_backend_status and rayo_device_type, in the order of rayo.h.
BACKEND_STATUS = ("loaded", "rejected", "unavailable", "disabled", "shadowed")
DEVICE_TYPES = ("cpu", "gpu", "software", "other")
TRANS_A, TRANS_B = 0x1, 0x2
ATTN_CAUSAL = 0x1
STEP_KV_LENGTH = 0x1
PRECISIONS = {None: 0, "default": 0, "strict": 1, "relaxed": 2}
ACTIVATIONS = {"none": 0, "relu": 1, "gelu": 2, "silu": 3, "tanh": 4, "sigmoid": 5}
UINT64_MAX = 2**64 - 1

_P = ctypes.POINTER
status = ctypes.c_int
_PROTOTYPES = {
    # name: (restype, argtypes)
    "rayo_strerror": (c_str, [status]),
    "rayo_last_error": (c_str, []),
    "rayo_version": (c_str, []),
    "rayo_op_count": (c_size, []),
    "rayo_op_at": (_P(OpInfo), [c_size]),
    "rayo_op_by_name": (_P(OpInfo), [c_str]),
    "rayo_open": (status, [_P(c_void), _P(Options)]),
    "rayo_close": (None, [c_void]),
    "rayo_run": (status, [c_void, _P(Call)]),
    "rayo_run_on": (status, [c_void, c_str, _P(Call)]),
    "rayo_backend_count": (c_size, [c_void]),
    "rayo_backend_get": (status, [c_void, c_size, _P(BackendInfo)]),
    "rayo_backend_for": (c_str, [c_void, ctypes.c_int, ctypes.c_uint32, c_size]),
    "rayo_config_file_count": (c_size, [c_void]),
    "rayo_config_file": (c_str, [c_void, c_size, _P(c_str)]),
    "rayo_thread_count": (ctypes.c_uint, [c_void]),
    "rayo_plugin_search_path": (c_str, [c_void]),
    "rayo_buffer_create": (status, [c_void, c_str, c_size, _P(c_void)]),
    "rayo_buffer_destroy": (None, [c_void]),
    "rayo_buffer_write": (status, [c_void, c_size, c_void, c_size]),
    "rayo_buffer_read": (status, [c_void, c_size, c_void, c_size]),
    "rayo_buffer_size": (c_size, [c_void]),
    "rayo_buffer_backend": (c_str, [c_void]),
    "rayo_buffer_set_constant": (status, [c_void]),
    "rayo_batch_create": (status, [c_void, c_str, _P(c_void)]),
    "rayo_batch_record": (status, [c_void, _P(BatchCall)]),
    "rayo_batch_submit": (status, [c_void]),
    "rayo_batch_wait": (status, [c_void, ctypes.c_uint64]),
    "rayo_batch_set_step": (status, [c_void, c_size]),
    "rayo_batch_destroy": (None, [c_void]),
    # the dtype helpers (rayo-dtype.h's, exported, and the library's own)
    "rayo_dtype_name": (c_str, [ctypes.c_int]),
    "rayo_dtype_by_name": (ctypes.c_int, [c_str]),
    "rayo_dtype_block_elems": (c_size, [ctypes.c_int]),
    "rayo_dtype_block_bytes": (c_size, [ctypes.c_int]),
    "rayo_dtype_row_bytes": (ctypes.c_int, [ctypes.c_int, c_size, _P(c_size)]),
    "rayo_f32_to_f16": (ctypes.c_uint16, [ctypes.c_float]),
    "rayo_f16_to_f32": (ctypes.c_float, [ctypes.c_uint16]),
    "rayo_f32_to_bf16": (ctypes.c_uint16, [ctypes.c_float]),
    "rayo_bf16_to_f32": (ctypes.c_float, [ctypes.c_uint16]),
    "rayo_dtype_from_f32": (status, [ctypes.c_int, c_void, c_void, c_size]),
    "rayo_dtype_to_f32": (status, [ctypes.c_int, c_void, c_void, c_size]),
}


class RayoError(Exception):
    """A rayo call failed: status (int), status_name (rayo_strerror) and the
    library's message (rayo_last_error) as the exception text."""

    def __init__(self, status_code, message):
        self.status = status_code
        self.status_name = lib.rayo_strerror(status_code).decode()
        super().__init__(f"{message} ({self.status_name})" if message else self.status_name)


def check(status_code):
    """Raises RayoError with the library's message when status_code is not RAYO_OK."""
    if status_code != 0:
        raise RayoError(status_code, lib.rayo_last_error().decode(errors="replace"))


class Handle:
    """An object over one C handle, freed once by close() (also at exit of a
    with block and when garbage-collected); using it after that is a ValueError."""
    handle = None
    _free = None  # the C function that frees the handle

    def close(self):
        if self.handle:
            type(self)._free(self.handle)
            self.handle = None

    def _live(self):
        if not self.handle:
            raise ValueError(f"rayo: the {type(self).__name__.lower()} is closed")
        return self.handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


lib, library_path = _load()
for _name, (_res, _args) in _PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, _args
