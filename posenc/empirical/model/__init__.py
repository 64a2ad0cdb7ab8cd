"""The reference model: the pre-LN Transformer (:mod:`.transformer`), its attention
(:mod:`.attention`: one attention call, kernel and mask included; :mod:`.mla`), TransformerLens-style
hooks (:mod:`.hooks`) and the PE modules (:mod:`.pe`).

This is the forward a reader learns from; it never imports the fast path
(:mod:`posenc.empirical.fast`), which reads these modules from outside."""
