"""The command line's commands, one file per command or group; `gatekeeper/cli.py` assembles
them into `gatekeeper` and maps what they raise to exit codes (gatekeeper/cli_exit.py)."""
