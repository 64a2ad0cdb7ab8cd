"""The results store and the sweep pipeline: the content-addressed store of runs
(:mod:`.store`, :mod:`.store_lock`), running jobs into it on a backend (:mod:`.sweep`), one
experiment per job (:mod:`.experiment`, :mod:`.experiment_result`), the reproduction plan
(:mod:`.reproduction`) and the dynamics sweep (:mod:`.dynamics_sweep`)."""
