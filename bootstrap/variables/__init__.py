"""Environment variables: the known-variables table, who reads each one, planning and applying them, the lint."""
