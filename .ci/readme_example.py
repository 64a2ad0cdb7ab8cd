"""Print the README's Python example (the ```python block of its "## Python" section)."""

import re
import sys
from pathlib import Path

text = Path(sys.argv[1]).read_text(encoding="utf-8")
match = re.search(r"```python\n(.*?)```", text.split("## Python", 1)[1], re.S)
if not match:
    sys.exit("README.md has no ```python block in its Python section")
sys.stdout.write(match.group(1))
