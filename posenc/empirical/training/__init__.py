"""Training: the loop (:mod:`.train`), seeds trained as one stacked model (:mod:`.seed_group`),
run folders and loading them (:mod:`.runs`), the training trace (:mod:`.trace`) and importing
the paper code's checkpoints as runs (:mod:`.paper_import`)."""
