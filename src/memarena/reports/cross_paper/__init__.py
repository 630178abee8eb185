"""The analysis behind notebooks/cross_paper.ipynb."""
