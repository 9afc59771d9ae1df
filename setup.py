"""Builds the extension module atvoss._atvoss with CMake for `pip install .` (with build
isolation into a plain venv, or `--no-build-isolation` offline) and `python3 -m build`
(pyproject.toml). The C++ libraries come from the system (scripts/setup.sh installs Debian's
packages). The CMake build directory is
$ATVOSS_BUILD_DIR or ./build; an existing one is reused, so after scripts/demo.sh nothing is
compiled again. Only the _atvoss and atvoss-kernel-runner targets are built: the runner (it
links only libc and libstdc++) goes into the package as atvoss/bin/atvoss-kernel-runner,
where atvoss/__init__.py points the host backend at it, so host tuning works from an
installed package with no environment variable."""
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    """build_ext that runs CMake and copies the module CMake built."""

    def build_extension(self, ext):
        build_dir = os.environ.get("ATVOSS_BUILD_DIR", os.path.join(ROOT, "build"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DATVOSS_BUILD_TESTS=OFF", "-DATVOSS_BUILD_BENCH=OFF",
                                   f"-DPython_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_atvoss", "atvoss-kernel-runner",
                               "-j", str(os.cpu_count() or 2)])
        package = os.path.join(build_dir, "python", "atvoss")
        built = [f for f in os.listdir(package) if f.startswith("_atvoss") and f.endswith(".so")]
        if len(built) != 1:
            raise RuntimeError(f"expected one _atvoss module in {package}, found {built}")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        if not built[0].endswith(suffix):
            raise RuntimeError(f"{build_dir} holds {built[0]}, built for another Python than {sys.executable} "
                               f"(which loads *{suffix}); set ATVOSS_BUILD_DIR to a new folder for this one")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(package, built[0]), target)
        runner = os.path.join(os.path.dirname(target), "bin", "atvoss-kernel-runner")
        os.makedirs(os.path.dirname(runner), exist_ok=True)
        shutil.copy2(os.path.join(build_dir, "bin", "atvoss-kernel-runner"), runner)  # keeps the x bit


# setuptools' own scratch folders, kept out of CMake's build/ (its default build_base) and
# out of the package's source folder.
SCRATCH = os.path.join(ROOT, ".setuptools")
os.makedirs(SCRATCH, exist_ok=True)
setup(ext_modules=[Extension("atvoss._atvoss", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join(SCRATCH, "build")},
               "egg_info": {"egg_base": SCRATCH}})
