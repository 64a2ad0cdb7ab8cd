"""Load a user's PE implementation by name and call it safely, with numpy or torch inputs.

``IMPL`` is one of ``package.module:function``, ``package.module.function`` or
``path/to/file.py:function`` (the attribute may be dotted, ``module:Class.method``).  Every
failure -- the module or file is missing, importing it raises, the attribute is missing or not
callable, calling it raises, it returns something that is not an array of the expected shape --
becomes a one-line :class:`~posenc.errors.PosencError` that shows the user's own exception
message, never our traceback.

Calling convention (documented in docs/usage.md): inputs are first given as numpy arrays
(``float64`` data, ``int64`` positions); if the callable raises on them, the same inputs are given
as torch tensors, and whichever works is used for every later call.  Outputs may be numpy arrays,
torch tensors, or anything ``numpy.asarray`` accepts; they are converted to ``float64`` numpy.
Only real numbers are taken (:func:`to_numpy`): complex, boolean, string and object outputs are
refused in one line, from any array library.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, Optional

import numpy as np

from ..errors import PosencError


def one_line(exc: BaseException, limit: int = 240) -> str:
    text = " ".join(str(exc).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _getattr_path(obj: Any, path: str, impl: str, where: str = "") -> Any:
    for part in path.split("."):
        if not hasattr(obj, part):
            name = where or getattr(obj, "__name__", type(obj).__name__)
            raise PosencError(f"{impl}: {name} has no attribute {part!r}")
        obj, where = getattr(obj, part), ""
    return obj


def _import_module(name: str, impl: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise PosencError(f"{impl}: no module named {exc.name!r}") from None
        raise PosencError(f"{impl}: importing {name!r} failed: {one_line(exc)}") from None
    except Exception as exc:
        raise PosencError(f"{impl}: importing {name!r} failed: {one_line(exc)}") from None


def _load_file(path: str, impl: str):
    if not os.path.isfile(path):
        raise PosencError(f"{impl}: no such file {path!r}")
    name = "_posenc_check_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PosencError(f"{impl}: cannot import {path!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PosencError(f"{impl}: importing {path!r} failed: {one_line(exc)}") from None
    return module


def load_callable(impl: str) -> Callable[..., Any]:
    """Resolve ``impl`` to a callable (see the module docstring for the accepted forms)."""
    text = impl.strip()
    if not text:
        raise PosencError("IMPL is empty; give module:function or path/to/file.py:function")
    target, colon, attr = text.rpartition(":")
    if colon and (target.endswith(".py") or os.sep in target or "/" in target):
        if not attr:
            raise PosencError(f"{impl}: give the function after the colon, file.py:function")
        obj = _getattr_path(_load_file(target, impl), attr, impl, where=target)
    elif colon:
        if not target or not attr:
            raise PosencError(f"{impl}: expected module:function")
        obj = _getattr_path(_import_module(target, impl), attr, impl)
    else:
        module_name, dot, attr = text.rpartition(".")
        if not dot or not module_name or not attr:
            raise PosencError(f"{impl}: expected module:function, module.function or "
                              f"file.py:function")
        obj = None
        parts = text.split(".")
        # The longest importable prefix is the module; the rest is the attribute path.
        for cut in range(len(parts) - 1, 0, -1):
            name = ".".join(parts[:cut])
            try:
                module = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                    continue        # this prefix is not a module; try a shorter one
                raise PosencError(f"{impl}: importing {name!r} failed: {one_line(exc)}") from None
            except Exception as exc:
                raise PosencError(f"{impl}: importing {name!r} failed: {one_line(exc)}") from None
            obj = _getattr_path(module, ".".join(parts[cut:]), impl)
            break
        if obj is None:
            raise PosencError(f"{impl}: no module named {parts[0]!r}")
    if not callable(obj):
        raise PosencError(f"{impl}: {type(obj).__name__} object is not callable")
    return obj


#: numpy dtype kinds of real numbers: signed and unsigned integers, floats
_REAL_KINDS = "iuf"
#: what the refused dtype kinds are, in a message
_NOT_REAL = {"c": "complex numbers (the imaginary part would be dropped)", "b": "booleans",
             "O": "Python objects", "U": "strings", "S": "bytes", "M": "datetimes",
             "m": "timedeltas", "V": "raw (void) records"}


def _not_real(impl: str, kind: str, dtype: Any) -> PosencError:
    what = _NOT_REAL.get(kind, f"dtype {dtype}")
    return PosencError(f"{impl} returned {what} (dtype {dtype}); a PE function must return real "
                       f"numbers (nothing was checked)")


def _from_tensor(value: Any, impl: str) -> Any:
    """A torch tensor (anything with ``detach`` and ``cpu``) as numpy: floats of any precision
    (bfloat16 included) as float64, complex ones refused; other values unchanged."""
    if not (hasattr(value, "detach") and hasattr(value, "cpu")):
        return value
    value = value.detach().cpu()
    if getattr(value, "is_complex", lambda: False)():
        raise _not_real(impl, "c", value.dtype)
    if getattr(value, "is_floating_point", lambda: False)() and hasattr(value, "double"):
        value = value.double()
    return value.numpy()


def _real_dtype(dtype: np.dtype) -> bool:
    """A dtype of real numbers: numpy's ints and floats, or a float type numpy does not know by
    kind (ml_dtypes' bfloat16 and float8, which JAX returns, have kind 'V')."""
    return dtype.kind in _REAL_KINDS or (dtype.kind == "V" and dtype.names is None
                                         and "float" in dtype.name)


def to_numpy(value: Any, impl: str) -> np.ndarray:
    """A returned value as a float64 numpy array, from numpy, torch (detached, on the CPU),
    anything with ``__array__`` (JAX) or nested lists and tuples of these (a (q, k) pair).

    Only real numbers are taken: complex values (whose imaginary part a float conversion drops),
    booleans, strings and Python objects are refused in one line, whatever library returned
    them."""
    if isinstance(value, (tuple, list)):
        value = [_from_tensor(v, impl) for v in value]
    else:
        value = _from_tensor(value, impl)
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise PosencError(f"{impl} returned {type(value).__name__}, not an array of real "
                          f"numbers ({one_line(exc)})") from None
    if not _real_dtype(arr.dtype):
        raise _not_real(impl, arr.dtype.kind, arr.dtype)
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise PosencError(f"{impl} returned dtype {arr.dtype}, not real numbers "
                          f"({one_line(exc)})") from None


class Caller:
    """Calls the user's function, deciding once between numpy and torch inputs."""

    def __init__(self, fn: Callable[..., Any], impl: str) -> None:
        self.fn, self.impl = fn, impl
        self.mode: Optional[str] = None     # "numpy" | "torch" once decided

    def _torch(self, args: tuple) -> tuple:
        import torch
        return tuple(torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                     for a in args)

    def call(self, *args: Any) -> np.ndarray:
        """Call with numpy arrays (or torch tensors after the numpy attempt failed).

        Every call gets fresh copies of the array inputs: a function that writes into its
        input (``x.copy_(...)``; ``x *= ...``) must not corrupt the probe's basis vectors and
        be misreported as non-linear."""
        args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        if self.mode == "numpy":
            return self._guarded(args, "numpy")
        if self.mode == "torch":
            return self._guarded(self._torch(args), "torch")
        try:
            out = to_numpy(self.fn(*args), self.impl)
            self.mode = "numpy"
            return out
        except (PosencError, KeyboardInterrupt):
            raise
        except Exception as first:
            first_text = one_line(first)
        except BaseException as exc:
            raise self._base(exc) from None
        try:
            out = to_numpy(self.fn(*self._torch(args)), self.impl)
        except (PosencError, KeyboardInterrupt):
            raise
        except Exception as second:
            second_text = one_line(second)
            also = "" if second_text == first_text else f" (and with torch tensors: {second_text})"
            raise PosencError(f"{self.impl} raised {first_text}{also}") from None
        except BaseException as exc:
            raise self._base(exc) from None
        self.mode = "torch"
        return out

    def _base(self, exc: BaseException) -> PosencError:
        """What the user's code raised outside Exception (sys.exit, a BaseException subclass
        of its own, GeneratorExit) as one line; KeyboardInterrupt never comes here: in this
        process it may be the user's Ctrl-C, which stays an interrupt."""
        if isinstance(exc, SystemExit):
            return PosencError(f"{self.impl} called sys.exit({exc.code!r}) while being checked; a "
                               f"PE function must return its result")
        return PosencError(f"{self.impl} raised {one_line(exc)} (a BaseException, not an "
                           f"Exception)")

    def _guarded(self, args: tuple, mode: str) -> np.ndarray:
        try:
            return to_numpy(self.fn(*args), self.impl)
        except (PosencError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise PosencError(f"{self.impl} raised {one_line(exc)}") from None
        except BaseException as exc:
            raise self._base(exc) from None

    def call_plain(self, *args: Any) -> np.ndarray:
        """Call with plain Python arguments (ints): no numpy/torch choice to make."""
        return self._guarded(args, "plain")
