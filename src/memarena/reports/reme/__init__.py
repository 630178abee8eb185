"""The analysis behind notebooks/reme.ipynb."""
