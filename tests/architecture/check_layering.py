#!/usr/bin/env python3
"""Issue 23's layering rules, checked on the source tree (no build needed):
  1. no file under engine/onnx, engine/shape or engine/ops reaches a backend header
     (engine/backends/...) through its quoted includes, directly or through other
     engine headers: importer, support check and shape inference ask ops/ instead;
  2. engine/ops stays host-only: no CUDA header, no .cu file.
Prints every violation as its include chain; exit 1 when there is one.
Usage: check_layering.py SOURCE_DIR"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def resolve(name):
    for base in ("engine", "engine/include"):
        path = os.path.join(root, base, name)
        if os.path.exists(path):
            return os.path.relpath(path, root)
    return None


def backend_chain(path, seen):
    """The include chain from `path` to the first backend header, or None."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for line in f:
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(m.group(1))
            if not target or target in seen:
                continue
            if target.startswith("engine/backends/"):
                return [path, target]
            seen.add(target)
            rest = backend_chain(target, seen)
            if rest:
                return [path] + rest
    return None


problems = []
for folder in ("engine/onnx", "engine/shape", "engine/ops"):
    for path in sorted(glob.glob(os.path.join(root, folder, "*"))):
        rel = os.path.relpath(path, root)
        chain = backend_chain(rel, set())
        if chain:
            problems.append("reaches a backend: " + " -> ".join(chain))
for path in sorted(glob.glob(os.path.join(root, "engine/ops", "*"))):
    rel = os.path.relpath(path, root)
    if rel.endswith((".cu", ".cuh")):
        problems.append(f"{rel}: engine/ops is host-only")
    with open(path, encoding="utf-8", errors="replace") as f:
        if re.search(r'#\s*include\s*[<"](cuda|cudnn|cublas|nvrtc)', f.read()):
            problems.append(f"{rel}: includes a CUDA header")
for p in problems:
    print(p)
checked = sum(len(glob.glob(os.path.join(root, d, "*"))) for d in ("engine/onnx", "engine/shape", "engine/ops"))
print(f"{len(problems)} layering violations in {checked} files")
sys.exit(1 if problems else 0)
