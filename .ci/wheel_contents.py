"""Fail unless the built wheel holds every .py file of the checkout's posenc/ package."""

import sys
import zipfile
from pathlib import Path

wheel, package = Path(sys.argv[1]), Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
wanted = {p.relative_to(package.parent).as_posix() for p in package.rglob("*.py")
          if "__pycache__" not in p.parts}
missing = sorted(wanted - names)
if missing:
    sys.exit(f"wheel {wheel.name} lacks {len(missing)} module(s): {', '.join(missing)}")
print(f"wheel {wheel.name}: all {len(wanted)} modules of {package.name}/ present")
