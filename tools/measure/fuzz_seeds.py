#!/usr/bin/env python3
"""Writes the seed corpus of tests/alloc_fuzz.cc: a few hand-written programs
that reach every operation, so the fuzzer starts from inputs that already
mean something. The encoding is the one the comment of alloc_fuzz.cc gives.

usage: tools/measure/fuzz_seeds.py [DIR]   (default tests/fuzz_corpus/alloc_fuzz)
"""
import os
import struct
import sys

MALLOC, FREE, REALLOC, ALIGNED, CALLOC, FLUSH, RELEASE, FAIL_MAPS = range(8)
NUM_CLASSES = 98


def small(n):  # 0..256
    return bytes([0, n])


def medium(n):  # up to 4 KiB
    return bytes([200]) + struct.pack("<H", n)


def of_class(cls, minus=0):  # sc_size(cls) - minus
    return bytes([230, cls - 1, minus])


def near_large(offset):  # HC_MAX_SMALL_SIZE - 64 + offset
    return bytes([247]) + struct.pack("<H", offset)


def impossible(below):  # SIZE_MAX - below
    return bytes([255]) + struct.pack("<H", below)


def op(code, *args):
    return bytes([code]) + b"".join(args)


def seeds():
    yield "small_churn", b"".join(op(MALLOC, small(n)) for n in range(0, 257, 7)) + b"".join(
        op(FREE, bytes([k])) for k in range(0, 37, 3))
    yield "every_class", b"".join(op(MALLOC, of_class(c, c % 16)) for c in range(1, NUM_CLASSES)) + \
        b"".join(op(FREE, bytes([0])) for _ in range(1, NUM_CLASSES))
    yield "large_boundary", b"".join(op(MALLOC, near_large(o)) for o in (0, 63, 64, 65, 4096, 30000)) + \
        op(FREE, b"\x02") + op(MALLOC, near_large(64)) + op(FREE, b"\x00") * 6
    yield "realloc_chain", op(MALLOC, small(1)) + b"".join(
        op(REALLOC, b"\x00", s) for s in (small(17), medium(1000), of_class(60), near_large(100), small(3),
                                          small(0), medium(4096))) + op(FREE, b"\x00")
    yield "aligned", b"".join(op(ALIGNED, bytes([log2]), small(40)) for log2 in range(0, 22)) + \
        op(ALIGNED, b"\x81", small(8)) + op(ALIGNED, b"\x80", small(8)) + \
        op(ALIGNED, bytes([21]), near_large(10)) + b"".join(op(FREE, bytes([k])) for k in range(23))
    yield "calloc", b"".join(op(CALLOC, bytes([c]), small(33)) for c in range(8)) + \
        op(CALLOC, b"\xff", small(16)) + op(CALLOC, b"\x03", impossible(0)) + \
        op(CALLOC, b"\x02", near_large(0)) + b"".join(op(FREE, b"\x00") for _ in range(9))
    yield "fault_injection", op(MALLOC, small(64)) + op(FAIL_MAPS, b"\x03") + \
        b"".join(op(MALLOC, near_large(o)) for o in (100, 200, 300, 400, 500)) + \
        op(MALLOC, of_class(97)) + op(REALLOC, b"\x00", near_large(1000)) + \
        op(FREE, b"\x00") * 8 + op(MALLOC, near_large(100))
    yield "impossible", op(MALLOC, impossible(0)) + op(MALLOC, impossible(4096)) + op(MALLOC, small(10)) + \
        op(REALLOC, b"\x00", impossible(1)) + op(ALIGNED, b"\x06", impossible(64)) + \
        op(CALLOC, b"\x01", impossible(0)) + op(FREE, b"\x00")
    yield "flush_release", b"".join(op(MALLOC, small(n)) + op(FREE, b"\x00") + op(MALLOC, medium(n * 9))
                                    for n in range(0, 250, 11)) + op(FLUSH) + op(RELEASE) + \
        b"".join(op(FREE, bytes([k])) for k in range(10)) + op(FLUSH) + op(RELEASE) + op(MALLOC, small(5))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fuzz_corpus", "alloc_fuzz")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
