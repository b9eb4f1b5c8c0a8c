"""Copies the top-level rules/ and schemas/ into the wheel as cleo_rules/_data."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py


class build_py(_build_py):
    def run(self):
        super().run()
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "cleo_rules" / "_data"
        for name in ("rules", "schemas"):
            dest = target / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(root / name, dest)


setup(cmdclass={"build_py": build_py})
