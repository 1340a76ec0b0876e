"""Only the build step pyproject.toml cannot say: the checkout's schemas/, cases/, systems/, claims/ and examples/ ship in
the wheel as memmatrix/home/, so an installed memmatrix runs from any folder (config.py finds them with
importlib.resources when no checkout is around). An editable install reads the checkout itself."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HOME = ("schemas", "cases", "systems", "claims", "examples")
NOT_SHIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".*")


class BuildWithHome(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        for name in HOME:
            if (root / name).is_dir():
                shutil.copytree(root / name, Path(self.build_lib) / "memmatrix" / "home" / name,
                                ignore=NOT_SHIPPED, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithHome})
