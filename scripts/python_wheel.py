#!/usr/bin/env python3
"""Packs the test suite's dev wheel of the Python package from the workspace's
own build, and prints its path.

    cargo build --workspace            # builds target/debug/lib_strata.so with the rest
    python3 scripts/python_wheel.py    # target/wheels/strata_db-<v>-cp310-abi3-<platform>.whl

Users build the wheel with maturin (`pip install ./crates/python`, whose
pyproject.toml names maturin as the build backend). The test suite does not:
maturin compiles the crate on its own (`cargo rustc` of one package), so
cargo resolves the features of every shared dependency for that one package,
not for the workspace, and rebuilt DataFusion and ~300 other crates a second
time — 15 minutes of CI on 2 cores. This script puts the library the
workspace build already made, and the package's Python half, into a wheel
with the same layout maturin gives it (`strata/__init__.py`,
`strata/errors.py`, `strata/_strata.abi3.so`, a dist-info with METADATA,
WHEEL and RECORD), so pip installs it as it would maturin's.

Plain python3, standard library only.
"""

import base64
import hashlib
import os
import re
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(ROOT, "crates", "python")


def version():
    text = open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read()
    m = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    if not m:
        sys.exit("Cargo.toml: no [workspace.package] version")
    return m.group(1)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main():
    profile = sys.argv[1] if len(sys.argv) > 1 else "debug"
    lib = os.path.join(ROOT, "target", profile, "lib_strata.so")
    if not os.path.isfile(lib):
        sys.exit(f"{lib}: not built (cargo build --workspace builds it)")
    v = version()
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"cp310-abi3-{platform}"
    dist = f"strata_db-{v}"
    files = []
    src = os.path.join(CRATE, "python", "strata")
    for name in sorted(os.listdir(src)):
        if name.endswith(".py"):
            with open(os.path.join(src, name), "rb") as f:
                files.append((f"strata/{name}", f.read()))
    with open(lib, "rb") as f:
        files.append(("strata/_strata.abi3.so", f.read()))
    meta = (
        "Metadata-Version: 2.1\n"
        "Name: strata-db\n"
        f"Version: {v}\n"
        "Summary: strata, a storage-aware relational engine, in-process from Python\n"
        "Requires-Python: >=3.10\n"
        "License: Apache-2.0\n"
    ).encode()
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: strata scripts/python_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    ).encode()
    files.append((f"{dist}.dist-info/METADATA", meta))
    files.append((f"{dist}.dist-info/WHEEL", wheel))
    record = [record_line(n, d) for n, d in files]
    record.append(f"{dist}.dist-info/RECORD,,")
    files.append((f"{dist}.dist-info/RECORD", ("\n".join(record) + "\n").encode()))
    out_dir = os.path.join(ROOT, "target", "wheels")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{dist}-{tag}.whl")
    with zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data, compresslevel=1)
    os.replace(out + ".tmp", out)
    print(out)


if __name__ == "__main__":
    main()
