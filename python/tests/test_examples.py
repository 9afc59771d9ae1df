"""The scripts of examples/python/ run as a user would run them and print what they claim."""
import os
import re
import subprocess
import sys

from conftest import SOURCE_DIR

EXAMPLES = os.path.join(SOURCE_DIR, "examples", "python")


def run(script, *args):
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *map(str, args)],
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tune_and_lookup(tmp_path):
    out = run("tune_and_lookup.py", tmp_path, 24)
    assert re.search(r"tuned .*: [0-9.]+ us \(default [0-9.]+ us", out)
    assert re.search(r"lookup .*: exact \(distance 0.00\)", out)
    assert re.search(r"lookup .*: nearest \(distance [1-9]", out)


def test_custom_policy():
    out = run("custom_policy.py", 24)
    assert re.search(r"coordinate-descent: best [0-9.]+ us", out)
    assert re.search(r"random: best [0-9.]+ us", out)


def test_profile_model():
    out = run("profile_model.py", "mlp", 2)
    assert "mlp on ascend910" in out
    assert len(re.findall(r"hint: \S", out)) == 2


def test_runtime_matmul(tmp_path):
    out = run("runtime_matmul.py", tmp_path, 3)
    assert re.search(r"tuned matmul.*: [0-9.]+ us \(default [0-9.]+ us\)", out)
    assert re.search(r"runtime 64x256x128: exact .*max abs error [0-9.]+e-0[5-9]", out)
    assert re.search(r"runtime 48x256x128: nearest .*max abs error [0-9.]+e-0[5-9]", out)
