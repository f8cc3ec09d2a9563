"""Command-line tools: argument parsing and printing only."""
