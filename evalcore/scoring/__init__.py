"""The scoring layer: runs metrics over a stored run and writes their results (`engine.py`),
records each pass in the manifest (`pass_record.py`), estimates a pass's cost (`estimate.py`),
re-judges a sample with a second judge (`spot_check.py`) and imports recorded answers
(`importer.py`, `import_fields.py`). Nothing is imported here, so importing one module of the
layer costs only that module."""
