"""Training: the loop (:mod:`.train`), run folders and loading them (:mod:`.runs`), the training
trace (:mod:`.trace`) and importing the paper code's checkpoints as runs (:mod:`.paper_import`)."""
