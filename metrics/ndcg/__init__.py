"""Makes the folder importable inside the project (doctests); ``evaluate.load`` does not use it."""
