"""The report's figures (posenc.report.figures): sites in layer order, a zoomed accuracy panel
that separates PEs at 98-100%, ablation strips over every seed with percent axes."""

import math

from posenc.empirical.analysis.ablation import AblationTable, LayerAblation
from posenc.empirical.analysis.plots import ablation_strip_plot
from posenc.report.figures import accuracy_figure, probe_figure, zoom_range
from posenc.report.measured import site_order


def _row(values, low=None, high=None):
    mean = sum(values) / len(values)
    return {"mean": mean, "values": values, "low": mean - 1 if low is None else low,
            "high": mean + 1 if high is None else high}


def test_sites_in_layer_order_the_input_first():
    stored = sorted(["embed", "block0", "block1", "block2", "block3", "block10"])  # JSON's order
    assert site_order(stored) == ["embed", "block0", "block1", "block2", "block3", "block10"]


def test_the_zoom_covers_the_pes_near_the_top_and_the_ceiling():
    rows = [_row([99.2, 99.6, 99.4], 98.9, 99.9), _row([99.9, 100.0, 99.95], 99.8, 100.0),
            _row([40.0, 42.0, 41.0])]
    low, high = zoom_range(rows, ceiling=100.0)
    assert 98.0 < low < 98.9 and 100.0 < high < 100.5  # the 40% PE is left out of the range
    assert high - low < 3  # 98-100% spread over the panel, not a sliver of a 0-100 axis


def test_two_seeds_draw_no_interval_and_the_zoom_stays_zoomed():
    """With 2 seeds the 95% t interval spans most of 0-100% (t = 12.7): it is not drawn, and it
    does not widen the zoomed panel, which stays on the seeds' own values."""
    rows = [_row([99.1, 99.9], 0.4, 100.0), _row([93.8, 97.7], 5.0, 100.0)]
    low, high = zoom_range(rows, ceiling=100.0)
    assert 93.0 < low < 93.8 and 100.0 < high < 100.8
    far = [_row([99.0, 99.0, 40.0], 0.0, 100.0)]  # a 3-seed PE averaging 79%: not zoomed
    assert zoom_range(far) is None
    wide = [_row([99.0, 99.5, 60.0, 100.0, 99.0, 100.0, 99.0, 100.0, 99.0, 100.0], 80.0, 100.0)]
    assert zoom_range(wide)[0] >= 80.0 - 0.08 * 20 - 1e-9  # the zoom's floor: 10 points under it
    assert zoom_range([_row([40.0, 42.0])]) is None
    nan = _row([99.0], math.nan, math.nan)  # one seed: no interval
    assert zoom_range([nan], ceiling=96.5)[0] < 96.5


def test_the_figures_draw(tmp_path):
    table = {"distance": {"rope": _row([99.5, 100.0]), "nope": _row([40.0, 41.0])}}
    ceil = [{"task": "distance", "accuracy": 100.0}]
    assert accuracy_figure(table, tmp_path / "a.png", ceil).stat().st_size > 1000
    probes = {"rope": [{"block0": 0.5, "block1": 0.4, "embed": 0.9}]}
    assert probe_figure(probes, tmp_path / "p.png").stat().st_size > 1000

    def table_of(seed):
        acc = (0.5 + 0.01 * seed, 0.9, 0.95)
        drops = tuple(1.0 - a for a in acc)
        layer = LayerAblation(0, 1.0, acc, drops, max(drops), 0, 0.5, 0.4)
        return AblationTable("zero", 100, 1.0, (layer,))
    path = ablation_strip_plot([table_of(s) for s in range(3)], tmp_path / "s.png", seeds=[0, 1, 2])
    assert path.stat().st_size > 1000
    assert ablation_strip_plot(table_of(0), tmp_path / "one.png").stat().st_size > 1000


def test_the_deposit_heatmap_draws_layers_that_matter_on_no_seed(tmp_path):
    from posenc.report.figures import deposit_heatmap
    deposits = {"nope": [[None, None]], "rope": [[0.9, None], [0.7, 0.3]]}
    assert deposit_heatmap(deposits, tmp_path / "d.png").stat().st_size > 1000
