"""The runtime table's C API from Python through ctypes, as a compiler's Python runtime would.
usage: table_ctypes_test.py <libatvoss_table.so> <table_small.json>; exit 0 when all pass."""
import ctypes
import json
import sys


def main(lib_path, table_path):
    lib = ctypes.CDLL(lib_path)
    lib.atvoss_table_open.restype = ctypes.c_void_p
    lib.atvoss_table_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.atvoss_table_lookup.restype = ctypes.c_void_p
    lib.atvoss_table_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.atvoss_table_size.restype = ctypes.c_long
    lib.atvoss_table_size.argtypes = [ctypes.c_void_p]
    lib.atvoss_table_free_string.argtypes = [ctypes.c_void_p]
    lib.atvoss_table_close.argtypes = [ctypes.c_void_p]

    def lookup(handle, workload):
        raw = lib.atvoss_table_lookup(handle, json.dumps(workload).encode())
        try:
            return json.loads(ctypes.string_at(raw).decode())
        finally:
            lib.atvoss_table_free_string(raw)

    error = ctypes.c_void_p()
    table = lib.atvoss_table_open(table_path.encode(), ctypes.byref(error))
    assert table, ctypes.string_at(error).decode()
    assert lib.atvoss_table_size(table) == 2

    exact = lookup(table, {"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}})
    assert exact["match"] == "exact", exact
    assert exact["schedule"]["tile_m"] == 128, exact
    near = lookup(table, {"op": "matmul", "dims": {"M": 80, "N": 64, "K": 64}})
    assert near["match"] == "approximate" and near["distance"] > 0, near
    assert near["workload"]["dims"]["M"] == 64, near
    assert lookup(table, {"op": "softmax", "dims": {"M": 8, "N": 8}})["match"] == "none"
    bad = lookup(table, {"op": "matmul", "dims": {"M": 0, "N": 1, "K": 1}})
    assert bad["match"] == "error" and "M" in bad["error"], bad

    missing = lib.atvoss_table_open(b"/nonexistent.json", ctypes.byref(error))
    assert not missing and b"cannot open" in ctypes.string_at(error)
    lib.atvoss_table_free_string(error)
    lib.atvoss_table_close(table)
    print("atvoss_table ctypes: all checks passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
