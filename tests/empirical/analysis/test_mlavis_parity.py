"""The latent-columns ablation is the paper code's MLA ablation: posenc's paper-code MLA, ablated
in that mode, gives the logits and accuracies of an independent reading of ``dis_gen/mlavis.py``
(paper_reference.mlavis_logits) on the paper code's model with the same weights; deliberate
departures from mlavis.py are caught, and so is mlavis.py's carry-over of a layer's last variant."""

import pytest
import torch
from paper_reference import MLAVIS_DEVIATIONS, MLATransformerDecoder, mlavis_logits

from posenc.empirical.analysis.ablation import ablate
from posenc.empirical.analysis.latent_ablation import MODE, latent_columns, latent_logits
from posenc.empirical.config import apply_overrides, preset
from posenc.empirical.paper_specs import paper_code_fields
from posenc.empirical.tasks import TaskData, make_split
from posenc.empirical.training.paper_import import convert
from posenc.empirical.training.runs import model_for

# smoke sizes: d_model 32, 4 heads (d_head 8), 2 layers, d_ff 64, vocabulary 16, length 16
D, H, LAYERS, FF, VOCAB, LEN = 32, 4, 2, 64, 16, 16
#: float32 through 2 layers of width 32, per-head loops against fused GEMMs (as the paper-code
#: parity test, test_paper_code.TOL): differences ~1e-6, far below this
TOL = 1e-5


def pair(latent):
    """The paper code's MLA (sharpened random weights) and posenc's model with its weights."""
    torch.manual_seed(0)
    ref = MLATransformerDecoder(VOCAB, D, H, LAYERS, FF, LEN, latent=latent).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.mul_(2.0)  # removing 8 latent dimensions then changes predictions
    spec, _, state = convert(ref.state_dict(), "mla", H)
    model = model_for(apply_overrides(preset("smoke", task="distance", pe=spec), paper_code_fields(spec)))
    model.load_state_dict(state)
    return ref, model.eval()


def tokens(n=64):
    toks = make_split(preset("smoke", task="distance").task, 0).test.tokens[:n]
    assert toks.shape[1] == LEN and (toks == 0).any()  # padding: the masks are exercised
    return toks


def ours(model, tok):
    with torch.no_grad():
        return [latent_logits(model, tok, layer) for layer in range(LAYERS)]


@pytest.mark.parametrize("latent", [20, 24])
def test_latent_columns_give_mlavis_logits(latent):
    """Latent 20: variants remove [0, 8), [8, 16), [16, 20) and nothing; 24: the last removes
    nothing either.  mlavis.py's last variant then restores the layer, so its loop as written
    (no restore at the end) is compared."""
    ref, model = pair(latent)
    tok = tokens()
    assert latent_columns(model, 0).active() == [0, 1, 2]
    want, got = mlavis_logits(ref, tok), ours(model, tok)
    for layer in range(LAYERS):
        diff = (want[layer] - got[layer]).abs().max().item()
        print(f"latent {latent}, layer {layer}: max |logit diff| = {diff:.2e}")
        assert diff <= TOL


def test_the_table_gives_mlavis_accuracies():
    """Labels: the unablated model's predictions (baseline 1.0), so each variant's accuracy is
    the share of predictions it leaves unchanged; the table's accuracies are mlavis.py's."""
    ref, model = pair(20)
    tok = tokens()
    with torch.no_grad():
        labels = ref(tok).argmax(-1)
    table = ablate(model, TaskData(tok, labels, (tok != 0).sum(1), VOCAB), MODE)
    want = mlavis_logits(ref, tok)
    assert table.baseline_acc == 1.0
    for la in table.layers:
        acc = [int((want[la.layer][v].argmax(-1) == labels).sum()) / len(tok) for v in range(H)]
        assert list(la.head_acc) == acc
        assert la.head_acc[3] == 1.0 and min(la.head_acc[:3]) < 1.0  # not vacuous


@pytest.mark.parametrize("deviation", MLAVIS_DEVIATIONS)
def test_a_deliberate_departure_from_mlavis_fails_the_parity(deviation):
    ref, model = pair(20)
    tok = tokens()
    want, got = mlavis_logits(ref, tok, deviation=deviation), ours(model, tok)
    diff = max((want[l] - got[l]).abs().max().item() for l in range(LAYERS))
    print(f"{deviation}: max |logit diff| = {diff:.2e}")
    assert diff > 100 * TOL


def test_mlavis_carries_a_layers_last_variant_into_the_next_layer():
    """Latent 128 (wider than 4 heads x 8): mlavis.py's last variant zeroes [24, 32) and is not
    put back, so its layer-1 ablations run with it; layer 0 agrees, layer 1 only with the weights
    put back -- which is what the latent-columns mode does."""
    ref, model = pair(128)
    tok = tokens()
    assert latent_columns(model, 0).active() == [0, 1, 2, 3]
    got = ours(model, tok)
    state = {k: v.clone() for k, v in ref.state_dict().items()}
    as_written = mlavis_logits(ref, tok)
    ref.load_state_dict(state)
    restored = mlavis_logits(ref, tok, restore=True)
    assert (as_written[0] - got[0]).abs().max() <= TOL
    assert (as_written[1] - got[1]).abs().max() > 100 * TOL
    assert all((restored[l] - got[l]).abs().max() <= TOL for l in range(LAYERS))
