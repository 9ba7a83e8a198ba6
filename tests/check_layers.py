#!/usr/bin/env python3
"""The include graph of src/ points one way (docs/architecture.md): each folder includes only
the folders below it. Prints every include that points up or sideways; exits 1 if any does.
Also fails on any environment read in src/ (getenv, secure_getenv, environ): configuration is
passed as values (BackendConfig and its option structs); only tools/ and tests/ read the
environment.

    python3 tests/check_layers.py [SRC_DIR]
"""
import os
import re
import sys

# A folder and the folders of src/ it may include, itself included.
ALLOWED = {
    "core": {"core"},
    "geometry": {"core", "geometry"},
    "ops": {"core", "geometry", "ops"},
    "converter": {"core", "geometry", "ops", "converter"},
    "backends": {"core", "geometry", "ops", "backends"},
    "runtime": {"core", "geometry", "ops", "converter", "backends", "runtime"},
    "quantizer": {"core", "geometry", "ops", "converter", "runtime", "quantizer"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ENVIRONMENT = re.compile(r'\b(?:secure_)?getenv\b|\benviron\b')


def main() -> int:
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    layers = set(ALLOWED)
    bad = []
    for layer in sorted(os.listdir(src)):
        folder = os.path.join(src, layer)
        if not os.path.isdir(folder):
            continue
        if layer not in ALLOWED:
            bad.append("%s: a folder of src/ that no layer names (add it to tests/check_layers.py)" % layer)
            continue
        for root, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for number, line in enumerate(text.splitlines(), 1):
                    if ENVIRONMENT.search(line):
                        bad.append("%s:%d reads the environment: %s" % (os.path.relpath(path, src), number, line.strip()))
                for target in INCLUDE.findall(text):
                    top = target.split("/", 1)[0]
                    if "/" in target and top in layers and top not in ALLOWED[layer]:
                        bad.append("%s includes %s" % (os.path.relpath(path, src), target))
    for line in bad:
        print(line)
    print("layers: %s" % ("%d include(s) or environment read(s) out of place" % len(bad) if bad
                          else "every include points down, and src/ reads no environment"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
