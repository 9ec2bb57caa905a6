#!/usr/bin/env python3
"""The synopses of docs/cli.md against the binary and the suites (used by test_docs.sh).

For every `mlw ...` line in the unlabelled fenced blocks of docs/cli.md (continuation lines
included), every option it names must be listed by `mlw COMMAND --help`, and must be typed in
at least one integration suite near a word of that command. Prints one line per
(command, option): `ok`, `NOT-IN-HELP` or `NOT-EXERCISED`, then exits 0 (test_docs.sh counts).
Usage: docs_options.py MLW CLI_MD SUITES_DIR
"""
import pathlib
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
# Words of a command path: lower-case words before the first option or placeholder.
PATH_WORD = re.compile(r"^[a-z][a-z0-9-]*$")


def synopses(text):
    """(path words, option list) for each command line of the unlabelled blocks."""
    blocks = re.findall(r"^```\n(.*?)^```", text, re.S | re.M)
    result = []
    for block in blocks:
        current = None
        for raw in block.splitlines():
            line = raw.split("  #")[0]
            if line.startswith("mlw"):
                # "list | show -n NAME | detach -n NAME": commands of one group; a "|"
                # between options ("[-w PASSWORD | --password-stdin]") is not one.
                parts = []
                for part in line[len("mlw"):].split(" | "):
                    if parts and not PATH_WORD.match(part.split()[0]):
                        parts[-1] += " | " + part
                    else:
                        parts.append(part)
                for index, part in enumerate(parts):
                    path = []
                    for word in part.split():
                        if not PATH_WORD.match(word):
                            break
                        path.append(word)
                    if index > 0:
                        path = result[-1][0][:-1] + path
                    current = (path, OPTION.findall(part))
                    result.append(current)
            elif current and line.strip().startswith("["):
                current[1].extend(OPTION.findall(line))
    return result


def help_options(mlw, path):
    out = subprocess.run([mlw, *path, "--help"], capture_output=True, text=True).stdout
    found = set()
    for line in out.splitlines():
        stripped = line.strip()
        if stripped.startswith("-"):
            head = stripped.split("  ")[0]
            found.update(OPTION.findall(head))
    return found


def exercised(suites, path, option):
    """The option is typed within three lines of a word of the command (its group aside:
    suites call helpers such as `attach -n X --partition P` for `attach slurm`)."""
    words = path[1:] or path
    if not words:  # a global option: anywhere
        words = [option]
    word = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, words)) + r")(?![\w-])")
    pattern = re.compile(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])")
    for suite in suites:
        for index, line in enumerate(suite):
            if pattern.search(line) and any(
                word.search(near) for near in suite[max(0, index - 3) : index + 1]
            ):
                return True
    return False


def main():
    mlw, cli_md, suites_dir = sys.argv[1:4]
    # Comment lines do not exercise anything.
    suites = [
        [line for line in p.read_text(errors="replace").splitlines()
         if not line.lstrip().startswith("#")]
        for p in sorted(pathlib.Path(suites_dir).glob("test_*.sh"))
    ]
    for path, options in synopses(pathlib.Path(cli_md).read_text()):
        known = help_options(mlw, path)
        for option in dict.fromkeys(options):
            if option == "-vv":  # -v given twice (a counted flag), not an option of its own
                option = "-v"
            name = " ".join(["mlw", *path, option])
            if option not in known:
                print(f"NOT-IN-HELP {name}")
            elif not exercised(suites, path, option):
                print(f"NOT-EXERCISED {name}")
            else:
                print(f"ok {name}")


if __name__ == "__main__":
    main()
