"""The product needs no peer: `import atvoss` imports neither Optuna nor Kernel Tuner, and an
adapter imported where its peer is missing says which package it needs (the suites under
peers/ run the adapters with the peers installed)."""
import importlib
import importlib.util
import subprocess
import sys

import pytest


def test_import_atvoss_loads_no_peer():
    code = "import sys, atvoss; print(sorted(m for m in ('optuna', 'kernel_tuner') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("adapter, peer, says", [("atvoss.optuna", "optuna", "needs Optuna"),
                                                 ("atvoss.kernel_tuner", "kernel_tuner", "needs Kernel Tuner")])
def test_an_adapter_without_its_peer_names_what_it_needs(adapter, peer, says):
    if importlib.util.find_spec(peer) is not None:
        pytest.skip(f"{peer} is installed in this interpreter")
    with pytest.raises(ImportError, match=says):
        importlib.import_module(adapter)
