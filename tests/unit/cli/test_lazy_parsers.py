"""The CLI builds only the invoked command's parsers; the rest comes from a table."""

from __future__ import annotations

import argparse
import importlib

import pytest

from cli.main import COMMANDS, build_parser


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_the_table_lists_what_each_module_registers_in_order() -> None:
    for module, names in COMMANDS:
        scratch = argparse.ArgumentParser(prog="coffer", add_help=False)
        commands = scratch.add_subparsers()
        importlib.import_module(module).register(commands, [])
        registered = tuple((c.dest, c.help) for c in commands._choices_actions)
        assert registered == names, module


def test_top_level_help_is_the_same_without_building_any_command() -> None:
    assert build_parser("").format_help() == build_parser().format_help()


@pytest.mark.parametrize("command", [name for _, names in COMMANDS for name, _ in names])
def test_a_command_built_alone_has_the_same_help(command: str) -> None:
    alone = _subcommands(build_parser(command)).choices[command]
    full = _subcommands(build_parser()).choices[command]
    assert alone.format_help() == full.format_help()
