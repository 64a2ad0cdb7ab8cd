"""The bug set: realistic correct PE code and realistic bugs (tests/checker/
realistic.py, and real library code through transformers where it is installed), each with the
words its failure must contain to count as *named* (not only flagged).

``python3 tests/checker/bug_set.py`` prints the table and the counts (flagged, named, missed,
false alarms); test_bug_set.py asserts every row."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realistic as R  # noqa: E402


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    kind: str
    named: Optional[str] = None          # None: correct code, must pass; else words the failure says
    options: dict = field(default_factory=dict)
    needs: Optional[str] = None          # a library the case needs
    absent: Optional[str] = None         # words the failures must not say (a spurious claim)

    @property
    def correct(self) -> bool:
        return self.named is None


# --- real library code (transformers), skipped where it is absent -------------------------------

@functools.lru_cache(maxsize=None)
def _llama_embedding(d: int, rope_type: str = "default"):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    params = {"rope_type": rope_type, "rope_theta": 10000.0}
    if rope_type == "dynamic":
        params["factor"] = 2.0
    cfg = LlamaConfig(hidden_size=d, num_attention_heads=1, head_dim=d,
                      max_position_embeddings=2048, rope_parameters=params)
    return LlamaRotaryEmbedding(cfg)


def hf_llama_qk(q, k, positions, rope_type="default"):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    cos, sin = _llama_embedding(q.shape[-1], rope_type)(q, positions[None])
    return apply_rotary_pos_emb(q, k, cos[0], sin[0], unsqueeze_dim=0)


def hf_llama(x, positions):
    return hf_llama_qk(x, x, positions)[0]


def hf_llama_dynamic(x, positions):
    return hf_llama_qk(x, x, positions, "dynamic")[0]


def hf_llama_kv_offset(q, k, positions):       # q at past_len + p, k at p
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    emb = _llama_embedding(q.shape[-1])
    cq, sq = emb(q, (positions + 11)[None])
    ck, sk = emb(k, positions[None])
    return apply_rotary_pos_emb(q, q, cq[0], sq[0], 0)[0], apply_rotary_pos_emb(k, k, ck[0], sk[0], 0)[0]


def hf_bloom(H, n):
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    alibi = build_alibi_tensor(torch.ones(1, n, dtype=torch.long), H, torch.float32)
    return alibi.reshape(H, 1, n) + R.causal_mask(n)


def hf_falcon(H, n):
    import torch
    from transformers.models.falcon.modeling_falcon import build_alibi_tensor
    alibi = build_alibi_tensor(torch.ones(1, n, dtype=torch.long), H, torch.float32)
    return alibi.reshape(H, 1, n) + R.causal_mask(n)


def hf_t5(n, bidirectional=True, swap=False):
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention
    ctx, mem = torch.arange(n)[:, None], torch.arange(n)[None, :]
    rel = (ctx - mem) if swap else (mem - ctx)
    return T5Attention._relative_position_bucket(rel, bidirectional=bidirectional,
                                                 num_buckets=32, max_distance=128)


def hf_t5_decoder(n):
    return hf_t5(n, bidirectional=False)


def hf_t5_transposed(n):
    return hf_t5(n, swap=True)


def _falcon_slopes(H: int) -> str:
    return "slopes=" + ":".join(repr(float(s)) for s in R.get_slopes(H))


TF = "transformers"
F16, BF16 = "float16", "bfloat16"
DYN = {"expect": "scaling=dynamic,factor=2,original=2048,seq_len=2048"}

CASES = [
    # --- correct rotary code ----------------------------------------------------------------
    Case("NeoX/Llama rotate_half", R.neox, "rope"),
    Case("NeoX rotary_pct=0.25 (first dims)", lambda x, p: R.neox(x, p, r=x.shape[-1] // 4), "rope",
         options={"expect": "fraction=0.25"}),
    Case("Llama 3 base 500000", lambda x, p: R.neox(x, p, base=500000.0), "rope",
         options={"expect": "base=500000,pairing=half"}),
    Case("GPT-J table of 2048", R.gptj_2048, "rope"),
    Case("GPT-J table of 2048, --max-positions 2048", R.gptj_2048, "rope",
         options={"max_positions": 2048}),
    Case("transformer-lens n_ctx 2048", R.transformer_lens, "rope"),
    Case("transformer-lens rotary_dim d/4", R.transformer_lens_partial, "rope"),
    Case("torchtune max_seq_len 4096", R.torchtune, "rope"),
    Case("dynamic NTK (call-dependent)", R.dynamic_ntk, "rope"),
    Case("Llama q/k apply_rotary_pos_emb", R.llama_qk, "rope-qk"),
    Case("xPos", R.xpos, "xpos"),
    Case("transformers LlamaRotaryEmbedding", hf_llama, "rope", needs=TF),
    Case("transformers dynamic NTK", hf_llama_dynamic, "rope", needs=TF),
    Case("transformers apply_rotary_pos_emb q/k", hf_llama_qk, "rope-qk", needs=TF),
    Case("dynamic NTK, --expect scaling=dynamic", R.dynamic_ntk, "rope", options=DYN),
    Case("transformers dynamic NTK, --expect scaling=dynamic", hf_llama_dynamic, "rope", needs=TF,
         options=DYN),
    Case("transformers dynamic NTK, scaling=dynamic, --max-positions 2048", hf_llama_dynamic,
         "rope", needs=TF, options={**DYN, "max_positions": 2048}),
    Case("learned bias over T5 buckets", R.t5_learned, "bias"),
    # --- correct biases ----------------------------------------------------------------------
    Case("Bloom-style ALiBi + causal mask", R.bloom_style, "bias"),
    Case("MPT full ALiBi", R.mpt_style, "bias", options={"expect": "slopes=press,direction=symmetric"}),
    Case("MPT causal ALiBi", lambda H, n: R.mpt_style(H, n, full=False), "bias"),
    Case("Falcon-style bfloat16 ALiBi, dtype=bfloat16", R.falcon_style, "bias",
         options={"expect": "dtype=bfloat16"}),
    Case("Falcon-style bfloat16 ALiBi, slopes=LIST", R.falcon_style, "bias",
         options={"expect": _falcon_slopes(12) + ",dtype=bfloat16"}),
    Case("transformers Bloom build_alibi_tensor", hf_bloom, "bias", needs=TF),
    Case("transformers Falcon build_alibi_tensor", hf_falcon, "bias", needs=TF,
         options={"expect": "slopes=press,direction=causal,dtype=bfloat16"}),
    Case("T5 encoder buckets", R.t5_encoder, "t5"),
    Case("T5 decoder buckets", R.t5_decoder, "t5", options={"expect": "bidirectional=false"}),
    Case("transformers T5 encoder", hf_t5, "t5", needs=TF,
         options={"expect": "num_buckets=32,max_distance=128"}),
    Case("transformers T5 decoder", hf_t5_decoder, "t5", needs=TF,
         options={"expect": "bidirectional=false"}),
    # --- rotary bugs -------------------------------------------------------------------------
    Case("positions ignored (arange)", R.rope_arange, "rope", "positions are ignored"),
    Case("no rotation at all", R.rope_no_rotation, "rope", "positions are ignored"),
    Case("position ids + 1", lambda x, p: R.neox(x, p, shift=1), "rope", "positions start at 1"),
    Case("sin and cos swapped", R.rope_sin_cos_swapped, "rope", "sin and cos look swapped"),
    Case("arange(d/2)/d slip", lambda x, p: R.neox(x, p, slip=True), "rope", "indexing slip",
         options={"expect": "base=10000"}),
    Case("default base where 500000 meant", R.neox, "rope", "base is 10000, expected 500000",
         options={"expect": "base=500000"}),
    Case("GPT-J pairing where NeoX meant", R.gptj_2048, "rope", "pairing is interleaved, expected half",
         options={"expect": "pairing=half"}),
    Case("interleaved table with rotate_half", R.rope_mixed_tables, "rope", "not orthogonal"),
    Case("rotation reversed (sin sign)", lambda x, p: R.neox(x, p, sign=-1.0), "rope",
         "rotates the other way"),
    Case("sin term dropped", lambda x, p: R.neox(x, p, drop_sin=True), "rope", "not orthogonal"),
    # θ_m = 10000^(−2m/(d−2)) is RoPE with base 10000^(d/(d−2)): only --expect can tell
    Case("theta exponent over d-2", R.rope_exponent_slip, "rope", "expected 10000",
         options={"expect": "base=10000"}),
    Case("float16 cos/sin table", lambda x, p: R.neox(x, p, table_dtype=R.torch.float16), "rope",
         "cos/sin tables are float16"),
    Case("bfloat16 cos/sin table", lambda x, p: R.neox(x, p, table_dtype=R.torch.bfloat16), "rope",
         "cos/sin tables are bfloat16"),
    Case("angles in bfloat16", lambda x, p: R.neox(x, p, angle_dtype=R.torch.bfloat16), "rope",
         "angles p·θ are computed in bfloat16"),
    Case("angles in bfloat16, --expect base=10000",
         lambda x, p: R.neox(x, p, angle_dtype=R.torch.bfloat16), "rope",
         "angles p·θ are computed in bfloat16", options={"expect": "base=10000"}, absent="base is"),
    Case("dynamic NTK that never updates with length", R.dynamic_ntk_never_updates, "rope",
         "never updates with length", options=DYN),
    Case("dynamic NTK sized by the chunk length", R.dynamic_ntk_chunk_length, "rope",
         "sized by the chunk length", options=DYN),
    Case("dynamic NTK that never resets", R.DynamicNTKNoReset(), "rope",
         "does not reset after a long call", options=DYN),
    Case("dynamic NTK that never resets, --max-positions 2048", R.DynamicNTKNoReset(), "rope",
         "does not reset after a long call", options={**DYN, "max_positions": 2048}),
    Case("dynamic NTK that never resets, no --expect", R.DynamicNTKNoReset(), "rope",
         "does not reset"),
    Case("linear scaling with floored positions", R.linear_truncated, "rope",
         "positions are truncated", options={"expect": "scaling=linear,factor=2"},
         absent="rotates the other way"),
    Case("angles in float16", lambda x, p: R.neox(x, p, angle_dtype=R.torch.float16), "rope",
         "angles p·θ are computed in float16"),
    Case("positions in float16", lambda x, p: R.neox(x, p, pos_dtype=R.torch.float16), "rope",
         "float16 overflow"),
    Case("GPT-J half-precision table", lambda x, p: R.gptj(x, p, half_table=True), "rope",
         "cos/sin tables are float16"),
    Case("partial rotary on the last dims", lambda x, p: R.neox(x, p, r=x.shape[-1] // 4,
                                                                 last_slice=True), "rope",
         "wrong slice"),
    Case("table indexed modulo its size", R.gptj_wrapped, "rope", "drifts",
         options={"max_positions": 100000}),
    Case("KV-cache offset (q from past_len)", R.kv_cache_offset, "rope-qk", "KV-cache offset"),
    Case("KV-cache offset (k from past_len)", R.kv_cache_offset_keys, "rope-qk", "KV-cache offset"),
    Case("q half-split, k interleaved", R.qk_mixed_pairing, "rope-qk", "different pairings"),
    Case("q and k with different bases", R.qk_mixed_base, "rope-qk", "different bases"),
    Case("RoPE applied twice to q", R.rope_twice_q, "rope-qk", "RoPE applied twice to q",
         absent="different bases"),
    Case("transformers KV-cache offset", hf_llama_kv_offset, "rope-qk", "KV-cache offset", needs=TF),
    Case("xPos ignoring its positions", R.xpos_arange, "xpos", "positions are ignored"),
    Case("xPos key scaled like the query", R.xpos_key_like_query, "xpos", "λ^(+j) like the query"),
    # --- bias bugs ---------------------------------------------------------------------------
    Case("bidirectional -s*(j-i), no abs", R.alibi_sign_flipped_bidirectional, "bias",
         "the distance has the wrong sign"),
    Case("bidirectional -s*(i-j), no abs", R.alibi_no_abs, "bias", "abs"),
    Case("causal -s*(j-i) (sign flipped)", R.alibi_sign_flipped_causal, "bias",
         "the distance has the wrong sign"),
    Case("causal mask on the wrong side", R.alibi_mask_wrong_side, "bias", "mask is on the wrong side"),
    Case("2^(-8h/H) for non-power-of-two H", R.alibi_naive_slopes, "bias",
         "non-power-of-two rule"),
    Case("extra heads without [0::2]", R.alibi_no_stride, "bias", "[0::2] forgotten"),
    Case("head index from 0", R.alibi_head_from_zero, "bias", "head index h−1"),
    Case("slopes of H+1 heads", R.alibi_heads_plus_one, "bias", "of H+1 heads"),
    Case("exp slopes where press meant", R.alibi_paper_exp, "bias", "pass --expect slopes=exp",
         options={"expect": "slopes=press"}),
    # Falcon's bias is bfloat16 on purpose: without --expect dtype=bfloat16 it fails, and says so
    Case("Falcon-style bfloat16 ALiBi, no dtype given", R.falcon_style, "bias",
         "pass --expect dtype=bfloat16"),
    Case("mask of +inf", R.alibi_plus_inf_mask, "bias", "+inf"),
    Case("slope·i·j (absolute positions)", R.alibi_absolute, "bias", "absolute positions"),
    Case("Falcon-style, slopes of H+1 heads", R.falcon_heads_plus_one, "bias", "of H+1 heads",
         options={"expect": "dtype=bfloat16"}),
    Case("causal ALiBi where symmetric meant", lambda H, n: R.mpt_style(H, n, full=False), "bias",
         "direction is causal, expected symmetric", options={"expect": "direction=symmetric"}),
    # --- T5 bugs -----------------------------------------------------------------------------
    Case("T5 i and j transposed", R.t5_transposed, "t5", "i and j are swapped"),
    Case("T5 off by one", R.t5_off_by_one, "t5", "off by one"),
    Case("T5 decoder with bidirectional buckets", R.t5_decoder_bidirectional, "t5",
         "decoder with bidirectional buckets", options={"expect": "bidirectional=false"}),
    Case("T5 max_distance 64 where 128 meant", R.t5_max_distance_64, "t5", "not the expected",
         options={"expect": "max_distance=128"}),
    Case("T5 16 buckets where 32 meant", R.t5_16_buckets, "t5", "not the expected",
         options={"expect": "num_buckets=32"}),
    Case("transformers T5 transposed", hf_t5_transposed, "t5", "i and j are swapped", needs=TF),
    Case("learned bias over T5 buckets, off by one", R.t5_learned_off_by_one, "bias",
         "T5 buckets off by one"),
    # --- the second bug set's shapes: flagged before, now named -----------------------------
    Case("frequencies in reverse plane order (inv_freq.flip)", R.rope_reversed_freqs, "rope",
         "the frequencies are in reverse plane order"),
    Case("RoPE applied twice (f(x, p) = R_p R_p x)", R.rope_applied_twice, "rope",
         "RoPE applied twice", absent="linear scaling ×0.5"),
    Case("linear factor applied as p·F, --expect scaling=linear,factor=2", R.linear_inverted,
         "rope", "applied as p·2 instead of p/2", options={"expect": "scaling=linear,factor=2"}),
    Case("k rotated the other way (sin sign on k only)", R.qk_key_reversed, "rope-qk",
         "k rotates the other way"),
    Case("ALiBi slopes in reverse head order", R.alibi_reversed_slopes, "bias",
         "in reverse head order"),
]

DIM = 32


def available(case: Case) -> bool:
    return case.needs is None or importlib.util.find_spec(case.needs) is not None


def run(case: Case):
    """(flagged, named, report text) for one case."""
    from posenc.checker import check_callable
    report = check_callable(case.fn, case.kind, dim=DIM, name=case.name, **case.options)
    failures = " | ".join(f"{p.name}: {p.detail} {p.counterexample or ''}" for p in report.failures)
    named = case.named is not None and case.named in failures and not (
        case.absent and case.absent in failures)
    return not report.ok, named, report.text()


def main() -> int:
    rows, counts = [], {"correct": 0, "false alarms": 0, "bugs": 0, "flagged": 0, "named": 0,
                        "missed": 0, "skipped": 0}
    for case in CASES:
        if not available(case):
            counts["skipped"] += 1
            rows.append((case.name, case.kind, "skipped", ""))
            continue
        flagged, named, _ = run(case)
        if case.correct:
            counts["correct"] += 1
            counts["false alarms"] += flagged
            rows.append((case.name, case.kind, "correct", "FALSE ALARM" if flagged else "passes"))
        else:
            counts["bugs"] += 1
            counts["flagged"] += flagged
            counts["named"] += named
            counts["missed"] += not flagged
            rows.append((case.name, case.kind, "bug", "named" if named else
                         "flagged, not named" if flagged else "MISSED"))
    width = max(len(r[0]) for r in rows)
    for r in rows:
        print(f"{r[0]:<{width}}  {r[1]:<7}  {r[2]:<7}  {r[3]}")
    print(", ".join(f"{k}: {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.exit(main())
