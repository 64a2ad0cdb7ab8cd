"""The learned position table of a model on local disk (``bound --hf DIR``): the weights of the
model's own absolute position embedding, read alone, never the whole model.

Which tensor: GPT-2's ``wpe.weight`` and BERT's ``embeddings.position_embeddings.weight``, with
whatever prefix the saved class gave it (``transformer.``, ``bert.``; none for a bare
``BertModel``); in a GGUF file ``position_embd.weight``.  Which file, in this order:
``model.safetensors``, the shard a ``model.safetensors.index.json`` names, ``pytorch_model.bin``
or the shard of ``pytorch_model.bin.index.json`` (read by torch with ``weights_only=True``); for
``--gguf FILE`` the file (gguf's reader; a float32, float16 or bfloat16 tensor, not a quantised
one).  The values are returned in float64.  Every failure is one :class:`PosencError` line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PosencError

if TYPE_CHECKING:
    import numpy as np

    from ..encodings.hf_local import LocalModel

#: model_type -> the name of its position table's tensor (a saved key ends in it)
TABLES = {"gpt2": "wpe.weight", "bert": "embeddings.position_embeddings.weight"}
GGUF_TABLE = "position_embd.weight"
SAFETENSORS, SAFE_INDEX = "model.safetensors", "model.safetensors.index.json"
TORCH_BIN, TORCH_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"
#: the largest index file read (a real one is under a few MB)
MAX_INDEX_BYTES = 64 * 2**20


@dataclass(frozen=True)
class PositionTable:
    """A model's own position table: ``values`` (positions x width, float64), the tensor's
    ``name``, the ``file`` it came from and the ``dtype`` it is stored in."""

    values: np.ndarray
    name: str
    file: str
    dtype: str

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.values.shape[0]), int(self.values.shape[1])

    def describe(self) -> str:
        rows, width = self.shape
        return f"the model's own table {self.name}, {rows} positions x {width} ({self.dtype}, {self.file})"

    def as_dict(self) -> dict:
        return {"source": "model", "name": self.name, "file": self.file, "dtype": self.dtype,
                "shape": list(self.shape)}


def _key(keys: Any, suffix: str, where: str, what: str) -> str:
    """The one key that is ``suffix`` or ends in ``.suffix``."""
    found = sorted(k for k in keys if k == suffix or k.endswith("." + suffix))
    if len(found) != 1:
        raise PosencError(f"{what}: {where} holds {'no' if not found else len(found)} tensor"
                          f"{'s' if len(found) > 1 else ''} named *{suffix}"
                          + (f" ({', '.join(found[:4])})" if found else "")
                          + "; the position table is read from it")
    return found[0]


def _index(path: str, suffix: str, what: str) -> tuple[str, str]:
    """(key, shard file) from a sharded checkpoint's index json."""
    if os.path.getsize(path) > MAX_INDEX_BYTES:
        raise PosencError(f"{what}: {path} is over {MAX_INDEX_BYTES // 2**20} MiB; not an index")
    try:
        with open(path, encoding="utf-8") as fh:
            weight_map = json.load(fh)["weight_map"]
        key = _key(weight_map, suffix, path, what)
        shard = weight_map[key]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, PosencError):
            raise
        raise PosencError(f"{what}: cannot read the index {path} ({type(exc).__name__})") from None
    shard_path = os.path.join(os.path.dirname(path), str(shard))
    if os.path.dirname(os.path.realpath(shard_path)) != os.path.realpath(os.path.dirname(path)):
        raise PosencError(f"{what}: {path} names a shard outside its folder ({shard!r})")
    return key, shard_path


def _from_safetensors(path: str, suffix: str, what: str, key: str | None = None
                      ) -> tuple[Any, str, str]:
    try:
        from safetensors import safe_open
    except ImportError:
        raise PosencError(f"{what}: reading {path} needs safetensors: pip install "
                          f"'posenc[hf]'") from None
    try:
        with safe_open(path, framework="np") as fh:
            key = key or _key(fh.keys(), suffix, path, what)
            dtype = fh.get_slice(key).get_dtype()
            if dtype == "BF16":                      # numpy has no bfloat16: torch reads it
                with safe_open(path, framework="pt") as pt:
                    return pt.get_tensor(key).float().numpy(), key, "bfloat16"
            return fh.get_tensor(key), key, dtype.lower().replace("f", "float")
    except PosencError:
        raise
    except Exception as exc:               # a corrupt or foreign file: its reader's complaint
        raise PosencError(f"{what}: cannot read {path} ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:160]})") from None


def _from_torch(path: str, suffix: str, what: str, key: str | None = None) -> tuple[Any, str, str]:
    try:
        import torch
    except ImportError:
        raise PosencError(f"{what}: reading {path} needs torch: pip install 'posenc[hf]'") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:
        raise PosencError(f"{what}: cannot read {path} ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:160]})") from None
    if not isinstance(state, dict):
        raise PosencError(f"{what}: {path} holds no state dict")
    key = key or _key(state, suffix, path, what)
    tensor = state[key]
    return tensor.float().numpy(), key, str(tensor.dtype).removeprefix("torch.")


def _from_gguf(path: str, what: str) -> tuple[Any, str, str]:
    try:
        import gguf
    except ImportError:
        raise PosencError(f"{what}: reading {path} needs gguf: pip install 'posenc[hf]'") from None
    try:
        reader = gguf.GGUFReader(path)
    except Exception as exc:
        raise PosencError(f"{what}: cannot read {path} ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:160]})") from None
    found = [t for t in reader.tensors if t.name == GGUF_TABLE]
    if not found:
        raise PosencError(f"{what}: {path} holds no tensor {GGUF_TABLE}; the position table is "
                          f"read from it")
    tensor = found[0]
    kind = tensor.tensor_type.name
    if kind not in ("F32", "F16", "BF16"):
        raise PosencError(f"{what}: {path}'s {GGUF_TABLE} is stored as {kind} (quantised); only "
                          f"an F32, F16 or BF16 table is read")
    import numpy as np

    data = np.asarray(tensor.data)
    if kind == "BF16":                               # stored as uint16 words: the high halves
        data = (data.astype(np.uint32) << 16).view(np.float32)
    return data, GGUF_TABLE, {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[kind]


def position_table(model: LocalModel, model_type: str, what: str = "bound --hf") -> PositionTable:
    """The learned absolute position table of ``model`` (a GPT-2 or BERT), read alone."""
    import numpy as np

    if model_type not in TABLES:
        raise PosencError(f"{what}: {model_type}'s position table is not read (only "
                          f"{', '.join(sorted(TABLES))} have a learned table here)")
    suffix = TABLES[model_type]
    if model.gguf is not None:
        path = os.path.join(model.folder, model.gguf)
        values, key, dtype = _from_gguf(path, what)
    else:
        # the first present of: safetensors, its index, torch .bin, its index
        for single, index, read in ((SAFETENSORS, SAFE_INDEX, _from_safetensors),
                                    (TORCH_BIN, TORCH_INDEX, _from_torch)):
            if os.path.isfile(os.path.join(model.folder, single)):
                path = os.path.join(model.folder, single)
                values, key, dtype = read(path, suffix, what)
                break
            if os.path.isfile(os.path.join(model.folder, index)):
                key, path = _index(os.path.join(model.folder, index), suffix, what)
                values, key, dtype = read(path, suffix, what, key)
                break
        else:
            raise PosencError(f"{what}: {model.folder} holds no weights ({SAFETENSORS}, "
                              f"{TORCH_BIN} or their index); its position table is read from them")
    table = np.asarray(values, dtype=np.float64)
    if table.ndim != 2 or min(table.shape) < 1:
        raise PosencError(f"{what}: {key} in {path} has shape {table.shape}; a position table is "
                          f"(positions, width)")
    if not np.all(np.isfinite(table)):
        raise PosencError(f"{what}: {key} in {path} holds NaN or infinity")
    return PositionTable(table, key, path, dtype)
