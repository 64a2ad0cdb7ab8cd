"""Size facts of posenc's source, for before/after comparisons of a refactor: the largest
functions, how many run over 60 and 100 lines, and the function-local imports (all of them, and
those of posenc's own modules).

    python scripts/code_metrics.py [ROOT]   # ROOT: a checkout (default: this one)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def functions(root: Path):
    """(lines, "module:qualname") of every function and method under ROOT/posenc."""
    for path in sorted((root / "posenc").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root).as_posix()

        def walk(node: ast.AST, prefix: str):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}{child.name}"
                    yield child.end_lineno - child.lineno + 1, f"{rel}:{name}", child
                    yield from walk(child, name + ".")
                elif isinstance(child, ast.ClassDef):
                    yield from walk(child, f"{prefix}{child.name}.")
        yield from walk(tree, "")


def local_imports(node: ast.AST):
    """The imports inside ``node``'s body (nested functions included), not the def's own level."""
    for child in ast.walk(node):
        if child is not node and isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    funcs = list(functions(root))
    top = sorted(funcs, key=lambda f: -f[0])[:5]
    print(f"functions: {len(funcs)}; over 60 lines: {sum(n > 60 for n, _, _ in funcs)}; "
          f"over 100: {sum(n > 100 for n, _, _ in funcs)}")
    for n, name, _ in top:
        print(f"  {n:4d}  {name}")
    seen: set[int] = set()
    total = own = 0
    files = set()
    for _, name, node in funcs:
        for imp in local_imports(node):
            if id(imp) in seen:
                continue
            seen.add(id(imp))
            total += 1
            files.add(name.split(":")[0])
            target = imp.module or "" if isinstance(imp, ast.ImportFrom) else imp.names[0].name
            if (isinstance(imp, ast.ImportFrom) and imp.level) or target.startswith("posenc"):
                own += 1
    print(f"function-local imports: {total} in {len(files)} files; to posenc's own modules: {own}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
