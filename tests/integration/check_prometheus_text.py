#!/usr/bin/env python3
"""A strict checker of the Prometheus text exposition format (0.0.4), as node_exporter's
textfile collector reads it.

    check_prometheus_text.py FILE|-

Exits 0 and prints the samples as JSON, [{"name", "labels", "value"}, ...], when the text is
valid; else exits 1 with `LINE: what is wrong` on stderr. Checked: every line ends with a
line feed; `# HELP` and `# TYPE` at most once per family, TYPE before its samples, a known
type; metric and label names; label values quoted, valid UTF-8, escaped with \\\\, \\" and
\\n only; no label named twice; values (and timestamps) as Prometheus parses them; every
sample belongs to a declared family (a counter's name ends in _total, a histogram's and
summary's samples take their suffixes); a family's lines together; no series twice; counters
not negative.
"""
import json
import math
import re
import sys

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


class Invalid(Exception):
    pass


def parse_value(text):
    if text in ("NaN", "+Inf", "-Inf", "Inf", "+inf", "-inf"):
        return float(text.replace("Inf", "inf"))
    if not FLOAT.match(text):
        raise Invalid(f"value {text!r} is not a number")
    return float(text)


def unescape_help(text):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "\\n":
                raise Invalid(f"HELP text has an invalid escape: {text!r}")
            out.append("\\" if text[i + 1] == "\\" else "\n")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_labels(text, i):
    """Parses `{name="value",...}` from text[i] == '{'; returns (labels, index after '}')."""
    labels = {}
    i += 1
    while True:
        if i < len(text) and text[i] == "}":
            return labels, i + 1
        m = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*").match(text, i)
        if not m:
            raise Invalid(f"bad label name at column {i + 1}")
        name = m.group(0)
        if name.startswith("__"):
            raise Invalid(f"label name {name!r} is reserved")
        if name in labels:
            raise Invalid(f"label {name!r} given twice")
        i = m.end()
        if text[i:i + 2] != '="':
            raise Invalid(f"label {name!r} lacks =\"")
        i += 2
        value = []
        while True:
            if i >= len(text):
                raise Invalid(f"label {name!r}: unterminated value")
            c = text[i]
            if c == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise Invalid(f"label {name!r}: invalid escape \\{nxt}")
                value.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise Invalid(f"label {name!r}: a raw line feed")
            else:
                value.append(c)
                i += 1
        labels[name] = "".join(value)
        if i < len(text) and text[i] == ",":
            i += 1
        elif i < len(text) and text[i] == "}":
            pass
        else:
            raise Invalid(f"expected , or }} after label {name!r}")


def check(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise Invalid(f"{line}: not UTF-8")
    if text and not text.endswith("\n"):
        raise Invalid(f"{text.count(chr(10)) + 1}: the last line has no line feed")
    types, helps, done, series, samples = {}, set(), set(), set(), []
    current = None

    def enter(family, number):
        nonlocal current
        if family != current:
            if family in done:
                raise Invalid(f"{number}: family {family} resumed after another one")
            if current is not None:
                done.add(current)
            current = family

    for number, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        try:
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                    if parts[0] != "#" or len(parts) < 3:
                        raise Invalid(f"malformed {parts[1]} line")
                    name = parts[2]
                    if not METRIC_NAME.match(name):
                        raise Invalid(f"bad metric name {name!r}")
                    enter(name, number)
                    if parts[1] == "HELP":
                        if name in helps:
                            raise Invalid(f"second HELP for {name}")
                        helps.add(name)
                        unescape_help(parts[3] if len(parts) > 3 else "")
                    else:
                        if name in types:
                            raise Invalid(f"second TYPE for {name}")
                        if any(s["family"] == name for s in samples):
                            raise Invalid(f"TYPE of {name} after its samples")
                        kind = parts[3] if len(parts) > 3 else ""
                        if kind not in TYPES:
                            raise Invalid(f"unknown type {kind!r}")
                        if kind == "counter" and not name.endswith("_total"):
                            raise Invalid(f"counter {name} does not end in _total")
                        types[name] = kind
                continue
            if not line.strip():
                raise Invalid("blank line")
            m = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*").match(line)
            if not m:
                raise Invalid("bad metric name")
            name, i = m.group(0), m.end()
            labels = {}
            if i < len(line) and line[i] == "{":
                labels, i = parse_labels(line, i)
            rest = line[i:]
            if not rest.startswith(" "):
                raise Invalid("no space before the value")
            fields = rest.split()
            if len(fields) not in (1, 2):
                raise Invalid(f"expected a value and an optional timestamp: {rest!r}")
            value = parse_value(fields[0])
            if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
                raise Invalid(f"bad timestamp {fields[1]!r}")
            family = None
            for candidate, kind in types.items():
                suffixes = SUFFIXES.get(kind, ("",))
                if any(name == candidate + suffix for suffix in suffixes):
                    family = candidate
            if family is None:
                raise Invalid(f"sample {name} belongs to no family declared by # TYPE")
            enter(family, number)
            if types[family] == "counter" and value < 0:
                raise Invalid(f"counter {name} is negative")
            key = (name, tuple(sorted(labels.items())))
            if key in series:
                raise Invalid(f"series {name}{labels} given twice")
            series.add(key)
            samples.append({"family": family, "name": name, "labels": labels, "value": value})
        except Invalid as error:
            raise Invalid(f"{number}: {error}")
    return [{k: s[k] for k in ("name", "labels", "value")} for s in samples]


def main():
    if len(sys.argv) != 2:
        print("usage: check_prometheus_text.py FILE|-", file=sys.stderr)
        return 2
    data = sys.stdin.buffer.read() if sys.argv[1] == "-" else open(sys.argv[1], "rb").read()
    try:
        samples = check(data)
    except Invalid as error:
        print(error, file=sys.stderr)
        return 1
    print(json.dumps(samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
