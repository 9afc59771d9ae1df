"""The held-out shapes of docs/decisions/host-default-in-place.md: each fp32 matmul's default
schedule against the same schedule with the other async_copy_depth (0: A and B read in place,
1: packed), one thread, weights prepacked as a model has them; prints in-place time / packed
time. Run: PYTHONPATH=build/python build/peers/bin/python bench/host_default_in_place.py"""
import atvoss

SHAPES = [(1, 12544, 64, 147), (1, 6400, 32, 288), (1, 4096, 96, 864), (1, 2048, 192, 1728), (1, 500, 256, 1024),
          (1, 289, 192, 1344), (1, 3000, 384, 240), (1, 1500, 384, 1152), (1, 64, 1000, 2048), (1, 2304, 768, 768),
          (12, 128, 128, 64), (12, 128, 64, 128), (12, 384, 64, 384), (4, 197, 64, 197), (32, 49, 32, 49)]


def main():
    print("%-22s %8s %10s %10s %8s" % ("shape", "default", "packed us", "inplace us", "ratio"))
    for b, m, n, k in SHAPES:
        dims = {"M": m, "N": n, "K": k}
        if b > 1:
            dims["B"] = b
        w = {"op": "batch_matmul" if b > 1 else "matmul", "dtype": "float32", "dims": dims, "epilogue": ["bias"]}
        default = atvoss.measure(w, "host", None, repeat=5)[0]
        base = dict(default.schedule)
        other = atvoss.measure(w, "host", dict(base, async_copy_depth=1 - min(1, base["async_copy_depth"])),
                               repeat=5)[0]
        inplace, packed = (default, other) if base["async_copy_depth"] == 0 else (other, default)
        label = ("%dx" % b if b > 1 else "") + "%dx%dx%d" % (m, n, k)
        print("%-22s %8s %10.0f %10.0f %8.3f" % (label, "inplace" if base["async_copy_depth"] == 0 else "packed",
                                                   packed.time_us, inplace.time_us, inplace.time_us / packed.time_us))


if __name__ == "__main__":
    main()
