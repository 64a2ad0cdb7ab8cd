"""The batched ablation of real-model heads (:mod:`posenc.empirical.pretrained.sweep`): equal to
the naive one-forward-per-unit loop on every supported family, and finding a planted deposit."""

import pytest
import torch
from tiny_models import BOS, DECODERS, ENCODERS, TOKENS, planted, tiny

from posenc.empirical.pretrained import probes as P
from posenc.empirical.pretrained import sweep as S
from posenc.empirical.pretrained.families import layout
from posenc.errors import PosencError

#: float32 forwards of a 2-layer width-32 model: the batched pass and the reference differ only in
#: the order of the same float32 operations (batch size, skipped layers fed their stored output),
#: so per-prediction losses agree to a few float32 ulps of values O(log vocab) ~ 5; the mean over
#: the probe's predictions is compared at 1e-4 absolute, ~100x that rounding.
LOSS_TOL = 1e-4


def _vocab(model, kind):
    v = P.vocabulary(model.config.vocab_size, None, model.config)
    if kind == "encoder":  # a tiny config's special ids: CLS, SEP, MASK stand-ins outside the pool
        return P.Vocabulary(tuple(i for i in v.pool if i > 4), None, 2, 3, 4)
    return v


def _check_equal(model, probe, mode, unit="head"):
    r = S.sweep(model, probe, mode, unit=unit, rows_per_pass=20, seed=5)
    masks = S.unit_masks(layout(model), unit)
    for i, l in enumerate(r.layers):
        for v in range(masks.shape[0]):
            acc, loss = S.naive_unit(model, probe, l, masks[v].nonzero().flatten().tolist(), mode, seed=5)
            assert r.acc[i][v] == pytest.approx(acc, abs=1e-12), (mode, l, v)
            assert r.loss[i][v] == pytest.approx(loss, abs=LOSS_TOL), (mode, l, v)
    return r


@pytest.mark.parametrize("model_type", DECODERS)
def test_batched_equals_naive_decoders(model_type):
    model = tiny(model_type)
    probe = P.make_probe("induction", "decoder", _vocab(model, "decoder"), examples=5, length=7, seed=1)
    for mode in (("zero", "mean", "resample") if model_type in ("llama", "gpt2") else ("resample",)):
        r = _check_equal(model, probe, mode)
        assert r.baseline_loss > 0 and len(r.acc) == 2 and len(r.acc[0]) == 4


@pytest.mark.parametrize("model_type", ENCODERS)
def test_batched_equals_naive_encoders(model_type):
    model = tiny(model_type)
    vocab = _vocab(model, "encoder")
    for name in ("masked-induction", "order"):
        probe = P.make_probe(name, "encoder", vocab, examples=5, length=6, seed=2)
        for mode in ("zero", "mean", "resample") if model_type == "bert" else ("resample",):
            _check_equal(model, probe, mode)


def test_encoder_without_head_runs_the_order_probe():
    model = tiny("bert-no-head")
    probe = P.make_probe("order", "encoder", _vocab(model, "encoder"), examples=6, length=6, seed=0)
    _check_equal(model, probe, "mean")
    with pytest.raises(PosencError, match="no output embedding"):
        S.sweep(model, P.make_probe("masked-induction", "encoder", _vocab(model, "encoder"), examples=3,
                                    length=6, seed=0))


def test_kv_groups_equal_naive_and_hold_their_heads():
    model = tiny("llama")
    lay = layout(model)
    masks = S.unit_masks(lay, "kv-group")
    assert masks.tolist() == [[True, True, False, False], [False, False, True, True]]
    probe = P.make_probe("recency", "decoder", _vocab(model, "decoder"), examples=4, length=3, seed=0)
    _check_equal(model, probe, "mean", unit="kv-group")


@pytest.mark.parametrize("layer", [0, 1, 2])
@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
def test_planted_deposit_is_found(layer, mode):
    model = planted(16, layer)
    probe = P.make_probe("induction", "decoder", P.Vocabulary(tuple(range(TOKENS)), BOS), examples=8,
                         length=16, seed=3)
    r = S.sweep(model, probe, mode)
    assert r.baseline_acc >= 0.85
    for i, l in enumerate(r.layers):
        drops = [r.baseline_acc - a for a in r.acc[i]]
        for h, d in enumerate(drops):
            if (l, h) == (layer, 2):
                assert d >= 0.8, (l, h, drops)
            else:
                assert abs(d) < 0.05, (l, h, drops)
    ind = r.scores[layer]["induction"]
    assert max(range(4), key=lambda h: ind[h]) == 2 and ind[2] > 0.85
    groups = S.sweep(model, probe, mode, unit="kv-group", layers=[layer])
    assert r.baseline_acc - groups.acc[0][1] >= 0.8 and abs(r.baseline_acc - groups.acc[0][0]) < 0.05


def test_planted_deposit_through_the_api():
    from posenc.api.pretrained import ablate_pretrained

    result = ablate_pretrained(planted(16, 1), "mean", examples=8, length=16, seed=3,
                               tokenizer=None)
    la = result.table.layers[1]
    assert la.deposit_head == 2 and la.deposit_index > 0.9 and result.single_head_layers == (1,)
    assert result.to_dict()["layers"][1]["scores"]["induction"][2] > 0.85


def test_pattern_scores_equal_a_loop():
    torch.manual_seed(0)
    R, H, T, L = 3, 2, 7, 2
    tokens = torch.randint(0, 4, (R, T))
    att = [torch.softmax(torch.randn(R, H, T, T), -1) for _ in range(L)]
    sums = S._PatternSums(L, H)
    sums.add(att, tokens)
    got = sums.result()
    for l in range(L):
        for h in range(H):
            dist = sum(float(att[l][r, h, i, j]) * abs(i - j) for r in range(R) for i in range(T)
                       for j in range(T)) / (R * T)
            prev = sum(float(att[l][r, h, i, i - 1]) for r in range(R) for i in range(1, T)) / (R * (T - 1))
            ind, n = 0.0, 0
            for r in range(R):
                row = tokens[r].tolist()
                for i in range(T):
                    js = [j for j in range(i) if row[j] == row[i]]
                    if js and js[-1] + 1 < i:
                        ind += float(att[l][r, h, i, js[-1] + 1])
                        n += 1
            assert got[l]["distance"][h] == pytest.approx(dist, rel=1e-9)
            assert got[l]["previous_token"][h] == pytest.approx(prev, rel=1e-9)
            assert got[l]["induction"][h] == pytest.approx(ind / n, rel=1e-9)


def test_layers_and_mode_refused():
    model = tiny("gpt2")
    probe = P.make_probe("induction", "decoder", _vocab(model, "decoder"), examples=3, length=5, seed=0)
    with pytest.raises(PosencError, match="layer indices in 0..1"):
        S.sweep(model, probe, layers=[2])
    with pytest.raises(PosencError, match="unknown ablation mode"):
        S.sweep(model, probe, "half")
    with pytest.raises(PosencError, match="unknown ablation unit"):
        S.sweep(model, probe, unit="layer")


def _t_half_width(values):
    """The reference: Student-t 95% half-width of the mean of ``values``, written out."""
    import math
    import statistics

    from scipy.stats import t as student_t
    return student_t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def test_drop_interval_is_the_t_interval_over_examples_of_one_forward_each():
    """Each unit's drop interval equals a Student-t interval over the per-example drops, each
    example's drop measured alone by the naive loop on a probe of that one example."""
    import dataclasses

    model = planted(16, 1)
    probe = P.make_probe("induction", "decoder", P.Vocabulary(tuple(range(TOKENS)), BOS), examples=6,
                         length=16, seed=4)
    r = S.sweep(model, probe, "zero", rows_per_pass=7)
    E, masks = probe.n_examples, S.unit_masks(layout(model), "head")
    one = [dataclasses.replace(probe, tokens=probe.tokens[e:e + 1], targets=probe.targets[e:e + 1])
           for e in range(E)]
    base = [S.naive_unit(model, p, 0, [], "zero")[0] for p in one]
    planted_width = None
    for i, l in enumerate(r.layers):
        for v in range(masks.shape[0]):
            drops = [base[e] - S.naive_unit(model, one[e], l, [v], "zero")[0] for e in range(E)]
            assert r.baseline_acc - r.acc[i][v] == pytest.approx(sum(drops) / E, abs=1e-12)
            assert r.drop_half_width[i][v] == pytest.approx(_t_half_width(drops), abs=1e-12), (l, v)
            if (l, v) == (1, 2):
                planted_width = r.drop_half_width[i][v]
    assert planted_width is not None and planted_width < 0.2   # the planted head: large on every example


def test_paired_half_widths_is_the_t_interval():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=50, deadline=None)
    @given(st.integers(2, 9), st.integers(1, 4), st.integers(1, 5), st.data())
    def check(E, V, k, data):
        counts = st.integers(0, k)
        base = torch.tensor(data.draw(st.lists(counts, min_size=E, max_size=E)), dtype=torch.float64)
        abl = torch.tensor([data.draw(st.lists(counts, min_size=E, max_size=E)) for _ in range(V)],
                           dtype=torch.float64)
        got = S.paired_half_widths(base, abl, E * k)
        for v in range(V):
            want = _t_half_width([(float(base[e]) - float(abl[v, e])) / k for e in range(E)])
            assert got[v] == pytest.approx(want, abs=1e-12)
    check()
    assert S.paired_half_widths(torch.ones(1), torch.zeros(3, 1), 4) == (None, None, None)
