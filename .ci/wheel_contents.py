"""Fail unless the built wheel holds every .py file of the checkout's posenc/ package, its
py.typed marker (PEP 561: type checkers read posenc's inline hints only where it is) and the
LICENSE in its metadata (.dist-info/licenses/, PEP 639)."""

import sys
import zipfile
from pathlib import Path

wheel, package = Path(sys.argv[1]), Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
modules = {p.relative_to(package.parent).as_posix() for p in package.rglob("*.py")
           if "__pycache__" not in p.parts}
wanted = modules | {f"{package.name}/py.typed"}
missing = sorted(wanted - names)
if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
    missing.append("*.dist-info/licenses/LICENSE")
if missing:
    sys.exit(f"wheel {wheel.name} lacks {len(missing)} file(s): {', '.join(missing)}")
print(f"wheel {wheel.name}: all {len(modules)} modules of {package.name}/ present, "
      f"with py.typed and LICENSE")
