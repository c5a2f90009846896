"""The `gatekeeper` command line: parse flags, build options, hand over, map errors to exit codes.

This module and the commands it assembles (gatekeeper/commands/, one file per command or group,
and the live proxy's in gatekeeper/live/commands.py) are the only code that touches argv and the
exit code. Every error reaches the user as one line on
stderr, never a traceback: a GatekeeperError carries its exit code (`gatekeeper/exit_codes.py`,
the one table of them: for `run`, 0 PROMOTE, 1 ROLLBACK, 2 HOLD; for `serve` and `golden record`,
1 an engine that cannot start; 3 a usage or configuration error everywhere).

The engine's commands (`serve`, `faults`) live in `gatekeeper/engine/commands.py` and are loaded
only when invoked or listed, so importing this module imports neither torch nor the engine.
"""

from __future__ import annotations

import importlib
import sys

import click

from gatekeeper import __version__, exit_codes
from gatekeeper.cli_exit import crashed, fail as _fail, stop_on_signals
from gatekeeper.errors import GatekeeperError, Terminated

_ENGINE_COMMANDS = {"serve": "serve", "faults": "list_faults"}  # command -> function in gatekeeper.engine.commands


class _Main(click.Group):
    """A click group whose errors are one line with their exit code, and whose engine commands
    load lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The gate side's commands and the engine's."""
        return sorted([*super().list_commands(ctx), *_ENGINE_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command by name; the engine's are imported on first use."""
        if cmd_name not in _ENGINE_COMMANDS:
            return super().get_command(ctx, cmd_name)
        try:
            module = importlib.import_module("gatekeeper.engine.commands")
        except ImportError as e:
            raise click.ClickException(f"`gatekeeper {cmd_name}` needs the engine extra "
                                       f"(pip install torch==2.13.0 && pip install 'gatekeeper[engine]'): {e}") from None
        command: click.Command = getattr(module, _ENGINE_COMMANDS[cmd_name])
        return command

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        stop_on_signals()
        try:
            rv = super().main(args=args, prog_name=prog_name or "gatekeeper", complete_var=complete_var,
                              standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
            sys.exit(exit_codes.USAGE)
        except click.UsageError as e:
            command = e.ctx.command_path if e.ctx else "gatekeeper"
            _fail(e.format_message(), exit_codes.USAGE, f"see `{command} --help`")
        except click.ClickException as e:
            _fail(e.format_message(), exit_codes.USAGE)
        except GatekeeperError as e:
            _fail(str(e), e.exit_code, e.hint)
        except click.Abort:
            _fail("interrupted", exit_codes.INTERRUPTED)
        except Terminated as e:
            _fail(str(e), e.exit_code)
        except Exception as e:  # noqa: BLE001 — gatekeeper's own failure: its own exit code, never ROLLBACK's
            crashed(e)
        sys.exit(rv if isinstance(rv, int) else exit_codes.OK)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gatekeeper")
def main() -> None:
    """gatekeeper: a correctness gate for upgrades of LLM inference engines."""


def _register() -> None:
    """The commands (gatekeeper/commands/ and the live proxy's), onto `main`."""
    from gatekeeper.commands.bisect import bisect
    from gatekeeper.commands.compare import compare
    from gatekeeper.commands.golden import golden
    from gatekeeper.commands.init import init
    from gatekeeper.commands.matrix import matrix, report
    from gatekeeper.commands.perf import perf
    from gatekeeper.commands.rejudge import rejudge
    from gatekeeper.commands.run import run
    from gatekeeper.commands.selftest import selftest
    from gatekeeper.commands.traffic import traffic
    from gatekeeper.live.commands import pairs, record, shadow

    traffic.add_command(record)
    for command in (run, rejudge, init, bisect, compare, golden, traffic, perf, matrix, report, selftest, shadow, pairs):
        main.add_command(command)


_register()

if __name__ == "__main__":
    main()
