"""The analysis behind notebooks/memco.ipynb."""
