# SPDX-License-Identifier: MIT
"""python -m rayo info: what the library found (a short rayo-info)."""
import sys

from . import Context, library_path, version


def info(out=sys.stdout):
    print(f"rayo {version()}  ({library_path})", file=out)
    with Context(allow_no_backend=True) as ctx:
        print(f"threads: {ctx.threads}", file=out)
        print(f"plugin search path: {ctx.plugin_search_path}", file=out)
        for path, status in ctx.config_files():
            print(f"config: {path} ({status})", file=out)
        for b in ctx.backends():
            where = f"{b['device']} [{b['device_type']}]" if b["status"] == "loaded" else b["reason"]
            print(f"backend {b['name']:<8} {b['status']:<11} {where}", file=out)
        for op in ("add", "matmul", "gemv"):
            print(f"{op} of 1e6: {ctx.backend_for(op, 1000000) or 'no backend'}", file=out)


def main(argv):
    if argv[1:] == ["info"]:
        info()
        return 0
    print("usage: python -m rayo info", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
