#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_frame_decoder (rpc/fuzz/corpus): real farm messages as
frames, and the hostile shapes the decoders must refuse (deep nesting, counts larger than
the bytes, oversized lengths), plus JSON texts. The files are committed; rerun this after
changing a message shape. Hand-encoded MessagePack so that it needs no Python package."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rpc", "fuzz", "corpus")


def mp(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if v < 0 and v >= -32:
            return struct.pack("b", v)
        return b"\xcf" + struct.pack(">Q", v) if v >= 0 else b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v if len(v) < 256 else b"\xc6" + struct.pack(">I", len(v)) + v
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, list):
        head = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return head + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        head = bytes([0x80 | len(v)]) if len(v) < 16 else b"\xde" + struct.pack(">H", len(v))
        return head + b"".join(mp(k) + mp(x) for k, x in sorted(v.items()))
    raise TypeError(v)


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def main():
    os.makedirs(OUT, exist_ok=True)
    request = mp({"repeat": 1, "seed": 7, "schedule": {"tile_m": 16}, "workload": {"op": "matmul", "M": 64}})
    seeds = {
        "login": frame(mp({"type": "login", "version": 1, "role": "worker", "mac": "ab" * 32})),
        "register": frame(mp({"type": "register", "targets": ["0123456789abcdef"], "slots": 4, "name": "host-1"})),
        "submit": frame(mp({"type": "submit", "items": [{"id": 1, "target": "T", "request": request},
                                                       {"id": -2.5, "target": None, "x": [True, False]}]})),
        "results": frame(mp({"type": "results", "results": [{"id": 3, "status": "ok", "measurement": mp({"time_us": 5.0})}]})),
        "two_frames": frame(mp({"type": "heartbeat"})) + frame(mp({"type": "stats"})),
        # 60000 nested arrays inside the message map: must be refused, not recursed into.
        "deep_arrays": frame(b"\x82" + mp("type") + mp("x") + mp("a") + b"\x91" * 60000 + b"\x01"),
        "deep_maps": frame(b"\x82" + mp("type") + mp("x") + mp("a") + b"\x81\xa1k" * 20000 + b"\x01"),
        "deep_mixed": frame(b"\x82" + mp("type") + mp("x") + mp("a") + b"\x91\x81\xa1k\xdc\x00\x01" * 6000 + b"\x01"),
        "array32_lies": frame(b"\x82" + mp("type") + mp("x") + mp("a") + b"\xdd\xff\xff\xff\xff\x01"),
        "map32_lies": frame(b"\xdf\xff\xff\xff\xff\xa4type\xa1x"),
        "bin32_lies": frame(b"\x82" + mp("type") + mp("x") + mp("a") + b"\xc6\xff\xff\xff\xff\x01"),
        "oversized_length": b"\x04\x00\x00\x00" + b"\x00" * 16,
        "json_deep": b"[" * 30000 + b"]" * 30000,
        "json_body": b'{"target":"ascend910","workload":{"op":"matmul","dims":{"M":512,"N":512,"K":512}}}',
        "json_bad_utf8": b'{"target":"\xff\xfe","workload":{}}',
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
