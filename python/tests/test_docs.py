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


def unannotated(name, fn):
    """The parameters and return of fn without a type annotation (the package's annotations
    are its types: mypy reads them, there is no separate stub)."""
    sig = inspect.signature(fn)
    missing = [p for p, v in sig.parameters.items() if p not in ("self", "cls") and v.annotation is v.empty]
    if sig.return_annotation is sig.empty and fn.__name__ != "__init__":
        missing.append("return")
    return [f"{name}: {m}" for m in missing]


def test_every_public_function_and_method_is_annotated():
    missing = []
    for module in (atvoss, atvoss.runtime, atvoss.constraints, atvoss.quantization):
        for name in getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]):
            obj = getattr(module, name)
            if inspect.isfunction(obj) and obj.__module__.startswith("atvoss"):
                missing += unannotated(name, obj)
            elif inspect.isclass(obj) and obj.__module__.startswith("atvoss"):
                for m, member in public_members(obj):
                    if inspect.isfunction(member) and member.__module__.startswith("atvoss"):
                        missing += unannotated(f"{name}.{m}", member)
    assert missing == [], missing


def test_the_version_is_the_package_version():
    root = os.environ.get("ATVOSS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        assert atvoss.__version__ == tomllib.load(f)["project"]["version"]
