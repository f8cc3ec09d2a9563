# Makes the presets an importable package (bootstrap.conf, via the bootstrap/conf link),
# which Hydra requires of a pkg:// search path entry.
