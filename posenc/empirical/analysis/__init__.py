"""Analysis of trained models: single-head ablation (:mod:`.ablation`), position probes
(:mod:`.probe`), training dynamics (:mod:`.dynamics`, :mod:`.dynamics_summary`,
:mod:`.dynamics_plots`) and the ablation figure (:mod:`.plots`)."""
