"""The catalogue by name (:data:`REGISTRY`) and the paper code's settings by name
(:data:`PRESETS`)."""

from __future__ import annotations

from .additive import ALiBi, KerpleLog, LearnedAbsolute, RelativeBias, Sinusoidal
from .base import NoPE, PESpec
from .composite import Custom, Hybrid
from .parts import structure
from .rotary import MLA, RoPE, XPos

REGISTRY: dict[str, type[PESpec]] = {
    cls.name: cls for cls in (NoPE, Sinusoidal, LearnedAbsolute, RelativeBias, ALiBi,
                              RoPE, MLA, Hybrid, Custom, XPos, KerpleLog)
}

#: The exact conventions of the paper's public code (Qihuai27/Deposit-Pattern-Research), by
#: name: ``dis_gen/trans.py`` (nope, absolute, alibi, relative, random, rope -- its ``rope``
#: adds a cat[sin, cos] table to the input), ``count_gen/partialrope.py`` (RoPE on the first k
#: heads, nothing added to the input) and ``dis_gen/mla.py``.  A preset name is resolved to its
#: spec when a run config is made (:class:`posenc.empirical.config.ModelConfig`), so a run
#: records what it trained; :data:`PRESETS_VERSION` counts the times their meaning changed.
PRESETS: dict[str, PESpec] = {
    "paper-nope": NoPE(),
    "paper-absolute": Sinusoidal(),
    "paper-random": LearnedAbsolute(max_len=128),
    "paper-rope": Hybrid(additive=Sinusoidal(layout="half"), rope=RoPE()),
    "paper-alibi": ALiBi(slopes="exp0"),
    "paper-relative": RelativeBias(mode="table", max_distance=127),
    "paper-mla": MLA(rope="paper_code", kv_latent=128, q_latent=128, absolute="learned"),
    "paper-absolute-rope": Hybrid(additive=Sinusoidal(layout="half"), rope=RoPE()),
}
#: 2: the presets follow the paper code exactly; before, paper-alibi had slopes
#: exp(-h/H) for h = 1..H, paper-rope and paper-absolute-rope an interleaved sin/cos table,
#: paper-relative 257 offsets and paper-mla a true rotation.
PRESETS_VERSION = 2
#: Preset names a run config may hold only if it was written before :data:`PRESETS_VERSION` 2.
OLD_PRESET_NAMES = tuple(PRESETS)


def kinds() -> dict[str, str]:
    """kind -> role of every part the catalogue's entries (at their defaults and presets, and
    every value of a parameter that changes the kind) are made of."""
    specs = [cls() for name, cls in REGISTRY.items() if name != "custom"]
    specs += [Custom(kernel="k"), Custom(frequencies=(1.0,)), RelativeBias(mode="table"),
              RoPE(add_absolute=True), MLA(absolute="learned"), MLA(absolute="sinusoidal"),
              MLA(rope="paper_code")]
    out = {}
    for spec in specs + list(PRESETS.values()):
        out.update({p.kind: p.role for p in structure(spec).parts})
    return out
