"""The type check a user of the package gets (ctest atvoss_python_mypy): `mypy --strict`
(python/mypy.ini) over the package itself, examples/python and every ```python block of the
README and docs/*.md. A block uses names it does not define (your kernel, your arrays);
PRELUDE declares them with the types a reader would have.
Usage: type_check.py SOURCE_DIR PACKAGE_DIR"""
import glob
import os
import re
import subprocess
import sys
import tempfile

PRELUDE = '''\
from typing import Any
import numpy as np
import atvoss
def time_it(**config: Any) -> float: return 1.0
a = np.zeros((64, 128), np.float32)
b = np.zeros((128, 256), np.float32)
bias = np.zeros(256, np.float32)
image = np.zeros((1, 3, 224, 224), np.float32)
'''


def blocks(path: str) -> list:
    text = open(path, encoding="utf-8").read()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def main() -> int:
    source, package = sys.argv[1], sys.argv[2]
    docs = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for doc in docs:
            for i, block in enumerate(blocks(doc)):
                name = os.path.join(tmp, f"{os.path.basename(doc)[:-3].replace('-', '_')}_block{i}.py")
                with open(name, "w", encoding="utf-8") as f:
                    f.write(f"# {os.path.relpath(doc, source)}, python block {i}\n" + PRELUDE + block)
                files.append(name)
        if not files:
            print("no python blocks found in the README or docs/", file=sys.stderr)
            return 1
        cmd = [sys.executable, "-m", "mypy", "--config-file", os.path.join(source, "python", "mypy.ini"),
               "--no-incremental", "--cache-dir=/dev/null", os.path.join(package, "atvoss"),
               os.path.join(source, "examples", "python"), *files]
        env = dict(os.environ, MYPYPATH=package)
        return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
