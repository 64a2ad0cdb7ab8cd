"""The early window of a dynamics recording (Gu et al., arXiv 2505.13027, Sec. 6): the records
the summary's early statistics average over and the recorder keeps per-example signals for."""


def default_early_steps(total_steps: int, every: int) -> int:
    """The early window's last step by default: 10% of training, at least one record interval."""
    return max(int(every), round(0.1 * total_steps))
