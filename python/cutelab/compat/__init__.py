"""Drop-in call signatures of other kernels' Python APIs, served by cutelab's kernels."""
