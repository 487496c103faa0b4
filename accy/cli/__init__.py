"""Command-line tools: `accy-opt` (accy.cli.opt) and `accy-run` (accy.cli.run)."""
