# SPDX-License-Identifier: MIT
"""The context's lifecycle, errors carrying rayo_last_error, device buffers
and batches, introspection and `python -m rayo info`."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rayo
from rayo._lib import lib


def test_error_carries_library_message(ctx):
    table = np.zeros((4, 8), dtype=np.float32)
    with pytest.raises(rayo.RayoError) as e:
        ctx.get_rows(table, np.array([1, 4], dtype=np.int32))  # 4 is outside [0, 4)
    assert e.value.status == 1  # RAYO_E_INVALID
    assert str(e.value).startswith(lib.rayo_last_error().decode())
    assert e.value.status_name in str(e.value)


def test_python_side_checks(ctx):
    with pytest.raises(ValueError, match="different sizes"):
        ctx.add(np.ones(3, dtype=np.float32), np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError, match="matmul of 2x3 by 4x2"):
        ctx.matmul(np.ones((2, 3), dtype=np.float32), np.ones((4, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="no op named"):
        ctx.run("nosuchop")


def test_closed_context():
    c = rayo.Context(config_files=False, environment=False)
    c.close()
    c.close()  # twice is harmless
    with pytest.raises(ValueError, match="closed"):
        c.add(np.ones(1, dtype=np.float32), np.ones(1, dtype=np.float32))


def test_settings_steer_dispatch():
    with rayo.Context(settings="[dispatch]\norder = scalar\n", config_files=False,
                      environment=False) as c:
        assert c.backend_for("add", 1000) == "scalar"
        assert np.array_equal(c.add(np.ones(5, dtype=np.float32), np.ones(5, dtype=np.float32)),
                              np.full(5, 2, dtype=np.float32))


def test_introspection(ctx):
    names = {b["name"]: b for b in ctx.backends()}
    assert names["scalar"]["status"] == "loaded" and names["scalar"]["ops"] > 0
    assert ctx.threads >= 1 and ctx.plugin_search_path
    ops = {name: sig for name, sig, _ in rayo.op_list()}
    assert ops["add"] == "binary" and ops["matmul"] == "matmul"
    assert all(callable(getattr(ctx, name)) for name in ops)
    assert "y = a + b" in rayo.Context.add.__doc__


def test_buffers_and_batch(ctx, rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    with ctx.buffer(3 * 4 * n) as buf, ctx.batch(buf.backend) as batch:
        assert buf.size == 3 * 4 * n
        buf.write(a)
        buf.write(b, offset=4 * n)
        batch.record("add", a=buf, b=(buf, 4 * n), y=(buf, 8 * n), n=n)
        batch.record("relu", a=(buf, 8 * n), y=(buf, 8 * n), n=n)
        batch.run()
        got = buf.read(n, offset=8 * n)
        assert np.array_equal(got, np.maximum(a + b, 0))
        with pytest.raises(rayo.RayoError):  # y runs past the buffer's end
            batch.record("add", a=buf, b=buf, y=(buf, 8 * n + 4), n=n)
    with pytest.raises(ValueError, match="closed"):
        buf.size


def test_batch_replay(ctx, rng):
    """A batch recorded once and submitted at three steps: its y moves one row a step."""
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    with ctx.buffer(4 * n * 4) as buf, ctx.batch(buf.backend) as batch:
        buf.write(np.zeros(4 * n, dtype=np.float32))
        buf.write(x)
        batch.record("scale", a=buf, y=(buf, 4 * n), n=n, alpha=1.0, step_bytes=(0, 0, 0, 4 * n))
        for step in range(3):
            batch.set_step(step)
            buf.write(np.array([step + 1.0], dtype=np.float32), offset=0)  # x[0] changes per submit
            batch.run()
        with pytest.raises(rayo.RayoError):  # step 3 would move y past the buffer's end
            batch.set_step(3)
        rows = buf.read((4, n))
    for step in range(3):
        want = x.copy()
        want[0] = step + 1.0
        assert np.array_equal(rows[step + 1], want)


def test_batch_quantized_gemv(ctx, rng):
    w = rayo.quantize(rng.standard_normal((16, 256)).astype(np.float32), "q4_k")
    x = rng.standard_normal(256).astype(np.float32)
    values = w.dequantize().astype(np.float64)
    with ctx.buffer(w.data.nbytes + 4 * 256 + 4 * 16) as buf, ctx.batch(buf.backend) as batch:
        buf.write(w.data)
        buf.write(x, offset=w.data.nbytes)
        batch.record("gemv", a=buf, b=(buf, w.data.nbytes), y=(buf, w.data.nbytes + 1024),
                     m=16, n=256, alpha=1.0, dtypes=("q4_k", "f32", "f32", "f32"))
        batch.run()
        got = buf.read(16, offset=w.data.nbytes + 1024)
    tol = 1e-5 * (np.abs(values) @ np.abs(x))
    assert (np.abs(got - values @ x) <= tol).all()


def test_module_info():
    env = dict(os.environ, RAYO_LIBRARY=rayo.library_path)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    env["PYTHONPATH"] = src
    out = subprocess.run([sys.executable, "-m", "rayo", "info"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert f"rayo {rayo.version()}" in out
    assert "backend scalar" in out and "loaded" in out
    bad = subprocess.run([sys.executable, "-m", "rayo", "bogus"], capture_output=True, text=True,
                         env=env)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_library_override(tmp_path):
    env = dict(os.environ, RAYO_LIBRARY=str(tmp_path / "missing.so"))
    env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    r = subprocess.run([sys.executable, "-c", "import rayo"], capture_output=True, text=True,
                       env=env)
    assert r.returncode != 0 and "RAYO_LIBRARY" in r.stderr and "missing.so" in r.stderr


def test_package_version_is_the_library_version():
    """pip's metadata (python/pyproject.toml) names the library's version."""
    import re
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyproject.toml")
    with open(path, encoding="utf-8") as f:
        declared = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert declared == rayo.version()
