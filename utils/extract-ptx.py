#!/usr/bin/env python3
"""Writes the PTX held by the gpu.binary ops of a lowered module.

usage: extract-ptx.py LOWERED.mlir PREFIX

lamina-gpu-pipeline with format=isa stores each kernel module's PTX as the
escaped string of a #gpu.object; this un-escapes each one into
PREFIX.<i>.ptx (i = 0, 1, ... in the order of the module) so that ptxas can
assemble them, and prints how many it wrote.
"""

import re
import sys

OBJECT = re.compile(r'assembly = "((?:[^"\\]|\\.)*)"')


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode()
            i += 1
        elif text[i + 1] in '\\"':
            out.append(ord(text[i + 1]))
            i += 2
        elif text[i + 1] in "nt":
            out.append(10 if text[i + 1] == "n" else 9)
            i += 2
        else:
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
    return bytes(out)


def main():
    source, prefix = sys.argv[1:3]
    with open(source, encoding="utf-8") as f:
        objects = OBJECT.findall(f.read())
    if not objects:
        sys.exit(f"{source}: no #gpu.object holds PTX")
    for i, text in enumerate(objects):
        with open(f"{prefix}.{i}.ptx", "wb") as f:
            f.write(unescape(text))
    print(f"{len(objects)} PTX modules")


if __name__ == "__main__":
    main()
