"""One module per ``posenc`` sub-command; see :mod:`posenc.cli`."""
