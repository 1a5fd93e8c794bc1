"""A release's `sglang serve` options as its own argparse builds them, as JSON,
written into the stack's tables (core/sglang/argparse-tables.json, one entry
per release; the others are kept as they are):

    python3 sglang-release/argparse_table.py --version 0.5.11

The parser is the one `prepare_server_args` makes (`argparse.ArgumentParser(
prog="sglang serve")` and `ServerArgs.add_cli_args`), from the release's real
wheel with the hardware stubbed, set up as oracle.py sets itself up. Each
option: its spellings, what it takes (`nargs`; 0 for the store_true / const /
count actions), `choices` as argparse compares them, the value type where it
is a builtin (`int`, `float`, `str`; another callable is named, not checked),
whether it is a `--x/--no-x` pair, and whether it accumulates when repeated
(`append`: append, extend, append_const, count). The stack reads the table to judge
`extraArgs` at preview (core/sglang/argparse.ts).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLES = os.path.join(HERE, "..", "core", "sglang", "argparse-tables.json")

if __name__ == "__main__" and not (sys.flags.isolated and sys.flags.no_site and sys.dont_write_bytecode):
    os.execv(sys.executable, [sys.executable, "-I", "-S", "-B", os.path.abspath(__file__), *sys.argv[1:]])

sys.path.insert(0, HERE)  # -I leaves the script's own directory off sys.path

import argparse  # noqa: E402
import json  # noqa: E402

import oracle  # noqa: E402


def option_of(action):
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)) or not action.option_strings:
        return None
    zero = isinstance(action, (argparse._StoreConstAction, argparse._CountAction)) or action.nargs == 0
    boolean_optional = type(action).__name__ == "BooleanOptionalAction"
    kind = action.type
    type_name = None if kind is None else kind.__name__ if kind in (int, float, str) else getattr(kind, "__name__", "callable")
    choices = None
    if action.choices is not None:
        try:
            choices = [c if isinstance(c, (int, float, str, bool)) else str(c) for c in action.choices]
        except TypeError:
            choices = None
    return {
        "flags": list(action.option_strings),
        "nargs": 0 if zero or boolean_optional else action.nargs,
        "type": type_name,
        "choices": choices,
        "booleanOptional": boolean_optional,
        # Accumulates when repeated (the others, SGLang's own actions included, set the value anew: the last wins).
        "append": isinstance(action, (argparse._AppendAction, argparse._ExtendAction, argparse._AppendConstAction, argparse._CountAction)),
    }


def main():
    p = argparse.ArgumentParser(prog="argparse_table.py")
    p.add_argument("--version", required=True)
    cli = p.parse_args()
    root = oracle.cache_root()
    site = os.path.join(root, cli.version, "site")
    deps = os.path.join(root, "deps", "site")
    for path in (site, deps):
        if not os.path.isdir(path):
            sys.exit(f"argparse_table.py: {path} is not installed; run sglang-release/install.sh")
    sys.path[:0] = [oracle.STUBS, site, deps]
    hf_home = os.path.join(root, "hf-home")
    os.makedirs(hf_home, exist_ok=True)
    base = oracle.base_env(dict(os.environ), oracle._stub_dists(site), hf_home)
    os.environ.clear()
    os.environ.update(base)
    import _sglang_lab_stub  # noqa: F401  (before anything imports torch)
    import sglang.version
    from sglang.srt.server_args import ServerArgs

    if sglang.version.__version__ != cli.version:
        sys.exit(f"argparse_table.py: {site} holds SGLang {sglang.version.__version__}, not {cli.version}")
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    options = [o for o in map(option_of, parser._actions) if o is not None]
    with open(TABLES) as f:
        tables = json.load(f)
    tables[cli.version] = {"version": cli.version, "prog": parser.prog, "allowAbbrev": parser.allow_abbrev, "options": options}
    write_tables(tables)


def write_tables(tables):
    """One option a line, releases oldest first, so that a new release's table reads as a diff of options."""
    entries = []
    for version in sorted(tables, key=lambda v: tuple(int(x) for x in v.split("."))):
        t = tables[version]
        head = json.dumps({"version": t["version"], "prog": t["prog"], "allowAbbrev": t["allowAbbrev"]})[:-1]
        lines = ",\n".join("    " + json.dumps(o) for o in t["options"])
        entries.append(f'  {json.dumps(version)}: {head}, "options": [\n{lines}\n  ]}}')
    with open(TABLES + ".new", "w") as f:
        f.write("{\n" + ",\n".join(entries) + "\n}\n")
    os.replace(TABLES + ".new", TABLES)


if __name__ == "__main__":
    main()
