"""Every public name of the package has a docstring (help() is useful) and a stub entry."""
import inspect
import os
import tomllib

import atvoss


def public_members(obj):
    for name, member in inspect.getmembers(obj):
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
            continue
        yield name, member


def test_every_public_name_and_method_is_documented():
    missing = []
    for name in atvoss.__all__:
        obj = getattr(atvoss, name)
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and obj.__module__.startswith("atvoss."):
            missing += [f"{name}.{m}" for m, member in public_members(obj) if not (member.__doc__ or "").strip()]
    assert missing == [], missing


def test_the_stub_declares_every_public_name():
    stub = open(os.path.join(os.path.dirname(atvoss.__file__), "__init__.pyi"), encoding="utf-8").read()
    undeclared = [n for n in atvoss.__all__ if f"class {n}" not in stub and f"def {n}(" not in stub]
    assert undeclared == [], undeclared


def test_the_version_is_the_package_version():
    root = os.environ.get("ATVOSS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        assert atvoss.__version__ == tomllib.load(f)["project"]["version"]
