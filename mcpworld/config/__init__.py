"""The structured config schema (Hydra's ConfigStore) and what runs before a job: launcher checks,
secret masking in Hydra's own files."""
