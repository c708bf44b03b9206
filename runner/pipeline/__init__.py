"""The parent of a compare: compare, run and their passes, over timing/, machine/, bisect/."""
