"""The runtime table's C API from Python through ctypes, as a compiler's Python runtime would.
usage: table_ctypes_test.py <libatvoss_table.so> <table_small.json>; exit 0 when all pass."""
import ctypes
import json
import sys


def main(lib_path, table_path):
    lib = ctypes.CDLL(lib_path)
    out = ctypes.POINTER(ctypes.c_void_p)
    lib.atvoss_table_open.restype = ctypes.c_int  # atvoss_table_status
    lib.atvoss_table_open.argtypes = [ctypes.c_char_p, out, out]
    lib.atvoss_table_lookup.restype = ctypes.c_int
    lib.atvoss_table_lookup.argtypes = [ctypes.c_void_p, ctypes.c_char_p, out, out]
    lib.atvoss_table_size.restype = ctypes.c_long
    lib.atvoss_table_size.argtypes = [ctypes.c_void_p]
    lib.atvoss_table_free_string.argtypes = [ctypes.c_void_p]
    lib.atvoss_table_close.argtypes = [ctypes.c_void_p]
    ok, bad_input, io = 0, 1, 3

    def taken(pointer):  # the text a malloc'd char* holds, freed
        try:
            return ctypes.string_at(pointer).decode() if pointer else None
        finally:
            lib.atvoss_table_free_string(pointer)

    def lookup(handle, workload):
        result, error = ctypes.c_void_p(), ctypes.c_void_p()
        status = lib.atvoss_table_lookup(handle, json.dumps(workload).encode(), ctypes.byref(result),
                                         ctypes.byref(error))
        text, message = taken(result), taken(error)
        return status, json.loads(text) if text else None, message

    table, error = ctypes.c_void_p(), ctypes.c_void_p()
    status = lib.atvoss_table_open(table_path.encode(), ctypes.byref(table), ctypes.byref(error))
    assert status == ok and table, taken(error)
    assert lib.atvoss_table_size(table) == 2

    status, exact, _ = lookup(table, {"op": "matmul", "dims": {"M": 1024, "N": 1024, "K": 1024}})
    assert status == ok and exact["match"] == "exact", exact
    assert exact["schedule"]["tile_m"] == 128, exact
    _, near, _ = lookup(table, {"op": "matmul", "dims": {"M": 80, "N": 64, "K": 64}})
    assert near["match"] == "nearest" and near["distance"] > 0, near
    assert near["workload"]["dims"]["M"] == 64, near
    assert lookup(table, {"op": "softmax", "dims": {"M": 8, "N": 8}})[1]["match"] == "none"
    status, result, message = lookup(table, {"op": "matmul", "dims": {"M": 0, "N": 1, "K": 1}})
    assert status == bad_input and result is None and "M" in message, (status, message)

    missing = ctypes.c_void_p()
    status = lib.atvoss_table_open(b"/nonexistent.json", ctypes.byref(missing), ctypes.byref(error))
    assert status == io and not missing and "cannot open" in taken(error)
    lib.atvoss_table_close(table)
    print("atvoss_table ctypes: all checks passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
