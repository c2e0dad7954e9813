"""`--all` covers different things per command (issue 23 item 12): each command's help says which, in one line."""

import typer

from durable_cli.cli.app import build_app

SAYS = {  # the command, and what its --all help must name
    "ls": "archived",
    "export": "every user",
    "usage": "every user",
    "transcript show": "superseded",
    "memory get": "unconfirmed or expired",
    "memory list": "unconfirmed and expired",
}


def all_options():
    found = {}

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, path + [name])
        for param in getattr(command, "params", ()):
            if "--all" in getattr(param, "opts", ()):
                found[" ".join(path)] = param.help

    walk(typer.main.get_command(build_app()), [])
    return found


def test_each_all_says_what_it_covers_there():
    found = all_options()
    for command, words in SAYS.items():
        assert words in found[command].lower(), (command, found[command])
    for command, text in found.items():
        assert "\n" not in text and len(text) <= 100, (command, text)
    assert len(set(found.values())) == len(found), "two commands describe --all alike"
