#!/usr/bin/python3
"""Runs every ratelimit command that the README and the man page give as an example.

Usage: doc_examples.py RATELIMIT README MANPAGE WORKDIR

Each example line's `ratelimit ...` invocation (up to the shell operator that ends it) runs
as written, with its own database in WORKDIR, except that:
- the command that `run` executes after `--` becomes `true` (no network, no side effects);
- the shell variables of a wrapper's `pause "$RATELIMIT_KEY" "$retry_after"` become a key
  and a duration of 1 s;
- a `--db` path becomes one in WORKDIR;
- files the example reads (a trace, a list of URLs) are small ones made in WORKDIR;
- named limits come from the man page's example of a configuration file (CONFIGURATION),
  without its [store] section.
An example passes when it exits 0 (granted, or done) or 1 (limited): a usage error (2), a
store error (3) or anything else fails it. Prints one line per failure and a summary;
exits 1 when any failed.
"""

import os
import re
import shlex
import subprocess
import sys

COMMANDS = {"try", "wait", "run", "pause", "pipe", "simulate", "status", "reset", "gc", "limits"}
# Global options that take a value, as separate words.
GLOBAL_WITH_VALUE = {"--db", "--store", "--config", "--redis-prefix", "--store-timeout",
                     "--store-ca", "--store-cert", "--store-key", "-E", "--limited-exit-code", "--lock-timeout", "--on-store-error"}
# Where an invocation ends on its line.
END = re.compile(r"\s(?:&&|\|\||\||;|<|>|#|&)(?:\s|$)|;\s*}|\s&$")


def readme_lines(path):
    lines, fenced = [], None
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = None if fenced is not None else line[3:].strip()
            continue
        if fenced is not None:
            lines.append((fenced, line.rstrip("\n")))
    return lines


def man_configuration(path):
    """The lines of the man page's first example under CONFIGURATION, unescaped."""
    lines, section, inside = [], None, False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(".SH "):
            section = line[4:]
        elif section == "CONFIGURATION" and line == ".EX":
            inside = True
        elif inside and line == ".EE":
            break
        elif inside:
            lines.append(unescaped(line))
    return lines


def unescaped(line):
    for escape, text in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\e", "\\"),
                         ("\\(ti", "~"), ("\\&", "")):
        line = line.replace(escape, text)
    return line


def man_lines(path):
    lines, inside = [], False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line in (".nf", ".EX"):
            inside = True
        elif line in (".fi", ".EE"):
            inside = False
        elif inside and not line.startswith("."):
            lines.append(("man", unescaped(line)))
    return lines


def invocations(line):
    """The argument lists of the `ratelimit` invocations on an example line."""
    found = []
    for match in re.finditer(r"(?:^|[\s;&|({])ratelimit\s+(.*)", line):
        rest = match.group(1)
        end = END.search(" " + rest)
        if end:
            rest = rest[: max(0, end.start() - 1)]
        try:
            words = shlex.split(rest)
        except ValueError:
            continue
        command = command_index(words)
        if command is not None:
            found.append(words)
    return found


def command_index(words):
    i = 0
    while i < len(words):
        if words[i] in COMMANDS:
            return i
        if words[i] in GLOBAL_WITH_VALUE:
            i += 2
        elif words[i].startswith("-"):
            i += 1
        else:
            return None
    return None


def sanitised(words, workdir, number):
    words = list(words)
    for i, word in enumerate(words[:-1]):
        if word == "--db":
            words[i + 1] = os.path.join(workdir, f"given-{number}.db")
    command = words[command_index(words)]
    if command == "pause":
        # A wrapper's `pause "$RATELIMIT_KEY" "$retry_after"`: a key and a duration of its own.
        at = command_index(words)
        for i, value in zip(range(at + 1, len(words)), ("k", "1")):
            if "$" in words[i]:
                words[i] = value
    if command == "run" and "--" in words:
        words = words[: words.index("--") + 1] + ["true"]
    for i, word in enumerate(words[:-1]):
        if word == "--trace" and words[i + 1] != "-":
            words[i + 1] = os.path.join(workdir, "trace.txt")
    return words


def main():
    ratelimit, readme, manpage, workdir = sys.argv[1:5]
    with open(os.path.join(workdir, "trace.txt"), "w") as trace:
        trace.write("0\n0.1\n0.2\n1.5\n")
    config = []
    for text in man_configuration(manpage):
        if text.startswith("[store]"):
            break
        config.append(text)
    with open(os.path.join(workdir, "limits.toml"), "w") as file:
        file.write("\n".join(config) + "\n")

    examples = []
    for kind, text in readme_lines(readme) + man_lines(manpage):
        if kind in ("sh", "crontab", "man"):
            examples += [(text, words) for words in invocations(text)]
    failures = 0
    for number, (text, words) in enumerate(examples):
        args = sanitised(words, workdir, number)
        env = dict(os.environ)
        env["RATELIMIT_DB"] = os.path.join(workdir, f"{number}.db")
        env["RATELIMIT_CONFIG"] = os.path.join(workdir, "limits.toml")
        env.pop("RATELIMIT_STORE", None)
        command = args[command_index(args)]
        stdin = "0\n0.1\n0.2\n" if command == "simulate" else "a\nb\n"
        try:
            result = subprocess.run([ratelimit] + args, input=stdin, capture_output=True,
                                    text=True, cwd=workdir, env=env, timeout=20)
            status = result.returncode
            error = result.stderr.strip().replace("\n", " ")
        except subprocess.TimeoutExpired:
            status, error = "timeout", "no answer within 20 s"
        if status not in (0, 1):
            failures += 1
            print(f"example failed (status {status}): {text.strip()}\n  ran: "
                  f"ratelimit {shlex.join(args)}\n  stderr: {error}")
    print(f"{len(examples)} examples ran, {failures} failed")
    return 1 if failures or not examples else 0


if __name__ == "__main__":
    sys.exit(main())
