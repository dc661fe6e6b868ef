"""Figures, drawn with matplotlib's object-oriented API and never ``pyplot``: no global figure
registry, no backend selection, nothing to close.

- :mod:`.figures`: the Latin + CJK fonts every figure draws with, saving a figure in the
  format its file name asks for, and a figure as an image array (for TensorBoard).
- :mod:`.heatmap`: the attention heat map, one panel per head, its tokens on both axes.
- :mod:`.charts`: line and bar charts, and a figure that says why there is nothing to plot.

Callers import each name from the module that owns it.
"""
