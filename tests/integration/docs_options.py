#!/usr/bin/env python3
"""The commands the docs show, against the binary and the suites (used by test_docs.sh).

For every `mlw ...` command in README.md and docs/*.md (lines of fenced blocks, continuation
lines included, and inline code spans), every option it names must be listed by
`mlw COMMAND --help` (or, for a global option, `mlw --help`), and must be typed in at least one
integration suite near a word of that command. Prints one line per (command, option): `ok`,
`NOT-IN-HELP` or `NOT-EXERCISED`, then exits 0 (test_docs.sh counts).
Usage: docs_options.py MLW SOURCE_DIR SUITES_DIR
"""
import pathlib
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
# Words of a command path: lower-case words before the first option or placeholder.
PIPED = re.compile(r" \| (?=(?:jq|cut|sort|head|grep|xargs|wc)\b)")
PATH_WORD = re.compile(r"^[a-z][a-z0-9-]*$")


def command_lines(text):
    """Every `mlw ...` command of a Markdown text: lines of fenced blocks (continued by a
    trailing backslash or by an indented `[...]` line) and inline code spans."""
    lines = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        for raw in block.splitlines():
            line = raw.split("  #")[0].rstrip()
            if lines and (lines[-1].endswith("\\") or line.lstrip().startswith("[")):
                lines[-1] = lines[-1].rstrip("\\") + " " + line.strip()
            elif line.startswith("mlw "):
                lines.append(line)
            else:
                lines.append("")  # ends a continuation
    lines += re.findall(r"`(mlw [^`]*)`", text)
    # What follows "&&" or a pipe into another program (jq, cut, …) is not mlw's.
    return [PIPED.split(line.split(" && ")[0])[0] for line in lines if line.startswith("mlw ")]


def options_of(part):
    """The options of one command, up to its SCRIPT or `--` (what follows is the script's)."""
    found = []
    for word in part.split():
        if word.endswith(".py") or word == "SCRIPT" or word == "--":
            break  # the script's words (after `--`: a rerun's new arguments)
        found += OPTION.findall(word)
    return found


def synopses(texts):
    """(path words, option list) for each command the texts show."""
    result = []
    for text in texts:
        for line in command_lines(text):
            # "list | show -n NAME | detach -n NAME": commands of one group; a "|" between
            # options ("[-w PASSWORD | --password-stdin]") is not one.
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
                result.append((path, options_of(part)))
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
    mlw, docs_root, suites_dir = sys.argv[1:4]
    root = pathlib.Path(docs_root)
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    # Comment lines do not exercise anything.
    suites = [
        [line for line in p.read_text(errors="replace").splitlines()
         if not line.lstrip().startswith("#")]
        for p in sorted(pathlib.Path(suites_dir).glob("test_*.sh"))
    ]
    seen = set()
    for path, options in synopses(doc.read_text() for doc in docs):
        # Global options stand anywhere before SCRIPT (cli.md); `mlw --help` lists them.
        known = help_options(mlw, path) | help_options(mlw, [])
        for option in dict.fromkeys(options):
            if option == "-vv":  # -v given twice (a counted flag), not an option of its own
                option = "-v"
            name = " ".join(["mlw", *path, option])
            if name in seen:
                continue
            seen.add(name)
            if option not in known:
                print(f"NOT-IN-HELP {name}")
            elif not exercised(suites, path, option):
                print(f"NOT-EXERCISED {name}")
            else:
                print(f"ok {name}")


if __name__ == "__main__":
    main()
