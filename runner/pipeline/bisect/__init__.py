"""perfgate bisect: which commit of a first-parent range changed a benchmark."""
