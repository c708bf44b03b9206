"""The machine and conditions a compare runs under; no other import of the pipeline."""
