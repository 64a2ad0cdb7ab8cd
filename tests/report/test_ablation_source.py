"""The report's words for the examples the head ablations ran on (posenc.report.ablation_source):
read from the runs' configs and tables, never from the model code alone -- paper-small runs the
paper code's models and ablates 500 test examples, not the whole data set."""

from synthetic_runs import result

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.report.ablation_source import ablation_source_text


def config(examples, data=None, n_samples=20000):
    return {"train": {"task": {"n_samples": n_samples}}, "ablation_examples": examples,
            **({"ablation_data": data} if data is not None else {})}


def ran(*counts):
    out = []
    for s, n in enumerate(counts):
        data = result("distance", "rope", s, 0.9)
        data["ablation"]["zero"]["n_examples"] = n
        out.append(ExperimentResult.from_stored(data))
    return out


def test_paper_small_says_test_examples_and_that_the_code_ablates_the_whole_set():
    text = ablation_source_text([config(500)] * 2, ran(500, 500), paper_code=True)
    assert text == "the first 500 test examples of each run (the paper code's `*vis.py` " \
                   "scripts ablate the whole data set)"
    assert "whole data set of each run" not in text


def test_standard_runs_name_the_count_that_ran():
    text = ablation_source_text([config(300, "test")] * 2, ran(300, 240), paper_code=False)
    assert text == "the first 240-300 test examples of each run"


def test_the_whole_set_only_when_every_config_asked_for_all_of_it():
    whole = [config(100000, "all", n_samples=100000)]
    assert ablation_source_text(whole, ran(100000), paper_code=True) == \
        "the whole data set of each run (100000 examples: train and test split, as the paper " \
        "code's `*vis.py` scripts ablate)"
    part = [config(3000, "all", n_samples=100000)]
    assert ablation_source_text(part, ran(3000), paper_code=True) == \
        "the first 3000 examples of the train and test splits of each run (the paper code's " \
        "`*vis.py` scripts ablate the whole data set)"
    mixed = whole + [config(500)]
    assert ablation_source_text(mixed, ran(100000, 500), paper_code=True).startswith(
        "the first 500-100000 examples of the train and test splits / the test split of each "
        "run")
