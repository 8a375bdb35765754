"""tensor2tensor's package, as t2t-lite's twins (``t2t_lite.compat``'s docstring)."""
