"""The analysis behind notebooks/evograph.ipynb."""
