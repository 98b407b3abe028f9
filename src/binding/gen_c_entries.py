#!/usr/bin/env python3
"""Writes the thin C entry points of src/mpi (blocking, nonblocking and
persistent forms and their large-count _c variants) from the families of
src/binding/c_entries.txt and the C parameter lists of src/binding/mpi_api.txt:
one src/mpi/entries/<file>_entries.inc per file section, included by
src/mpi/<file>.cpp. The format is described at the top of c_entries.txt.

    python3 src/binding/gen_c_entries.py            write the .inc files
    python3 src/binding/gen_c_entries.py --check    exit 1 if one is stale
    python3 src/binding/gen_c_entries.py --list     print the names written

Python 3 standard library only."""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import mpi_api  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
LIMIT = 120  # the repository's line length
REGENERATE = "python3 src/binding/gen_c_entries.py"


class Error(Exception):
    pass


def shown(path):
    """A path as messages show it: relative to the repository when inside."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith("..") else rel


class Form:
    def __init__(self, key, pattern, line):
        self.key, self.pattern, self.line = key, pattern, line
        self.vars = {}
        self.pre = []
        self.body = "return {call};"


class Family:
    def __init__(self, base, forms, line, comment):
        self.base, self.forms, self.line = base, forms, line
        self.comment = comment  # the '#' lines right above it
        self.lines = []  # the indented lines: statements, then the call


class Section:
    def __init__(self, key, prefix, line):
        self.key, self.prefix, self.line = key, prefix, line
        self.forms = {}
        self.families = []


def parse_entries(text, path):
    sections = []
    target = None  # the Form or Family that indented lines belong to
    comment = []
    for n, raw in enumerate(text.split("\n"), 1):
        where = f"{path}:{n}"
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped[1:].strip())
            continue
        if not stripped:
            comment = []
            continue
        if line[0].isspace():
            if target is None:
                raise Error(f"{where}: indented line outside a form or a family")
            if isinstance(target, Form):
                m = re.match(r"^(\w+)\s*=\s?(.*)$", stripped)
                if not m:
                    raise Error(f"{where}: expected VAR = TEXT under form {target.key}")
                name, value = m.group(1), m.group(2).strip()
                if name == "pre":
                    target.pre.append(value)
                elif name == "body":
                    target.body = value
                elif name in ("fn", "call"):
                    raise Error(f"{where}: {{{name}}} is reserved, not a form variable")
                else:
                    target.vars[name] = value
            else:
                target.lines.append((stripped, where))
            comment = []
            continue
        words = stripped.split()
        if words[0] == "file":
            if len(words) != 3:
                raise Error(f"{where}: expected: file KEY PREFIX")
            sections.append(Section(words[1], words[2], where))
            target = None
        elif words[0] == "form":
            if not sections:
                raise Error(f"{where}: form before the first file line")
            if len(words) != 3 or words[2].count("*") != 1:
                raise Error(f"{where}: expected: form FORM PATTERN (one '*' in PATTERN)")
            s = sections[-1]
            if words[1] in s.forms:
                raise Error(f"{where}: form {words[1]} defined twice for file {s.key}")
            target = s.forms[words[1]] = Form(words[1], words[2], where)
        else:
            m = re.match(r"^(\w+):\s*(.*)$", stripped)
            if not m or not m.group(2).split():
                raise Error(f"{where}: expected: file, form or BASE: FORM [FORM ...]")
            if not sections:
                raise Error(f"{where}: family before the first file line")
            target = Family(m.group(1), m.group(2).split(), where, comment)
            sections[-1].families.append(target)
        comment = []
    return sections


def strip_strings(text):
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def substitute(template, values, where, what):
    def one(m):
        name = m.group(1)
        if name not in values:
            raise Error(f"{where}: {what}: no value for {{{name}}}")
        return values[name]

    return re.sub(r"\{([A-Za-z_]\w*)\}", one, template)


def function_name(section, form, base, where):
    if not base.startswith(section.prefix) or len(base) == len(section.prefix):
        raise Error(f"{where}: {base} does not start with {section.prefix}, the prefix of file {section.key}")
    stem = base[len(section.prefix):]
    before, after = form.pattern.split("*")
    if before and before[-1].isalpha():
        stem = stem[0].lower() + stem[1:]
    return section.prefix + before + stem + after


def declaration(p):
    t = p.ctype.strip()
    dims = ""
    if "[" in t:
        i = t.index("[")
        t, dims = t[:i].strip(), t[i:].replace(" ", "")
    t = re.sub(r"\s*\*", "*", t)
    return f"{t} {p.name}{dims}"


# ---- formatting -----------------------------------------------------------------


def string_end(text, i):
    """The index just past the string literal that starts at text[i]."""
    j = i + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def split_top(text, sep=","):
    """Splits at the separators outside brackets and string literals."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = string_end(text, i)
            cur.append(text[i:j])
            i = j
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur).strip())
    return parts


def call_parts(text):
    """(head up to and with the first top-level '(', arguments, the rest from
    its ')'), or None when the text is no call."""
    depth, start, i = 0, None, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = string_end(text, i)
            continue
        if c == "(":
            if depth == 0 and start is None:
                start = i
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and start is not None:
                return text[: start + 1], split_top(text[start + 1 : i]), text[i:]
        i += 1
    return None


def wrap(text, col, suffix=""):
    """Lines of `text` + `suffix` with the first one at column `col`: a call
    that does not fit has its arguments filled in after its '(' (a nested call
    that does not fit either is wrapped the same way). Continuation lines
    carry their indentation; the first line carries none."""
    if col + len(text) + len(suffix) <= LIMIT:
        return [text + suffix]
    parts = call_parts(text)
    if not parts or not parts[1] or parts[1] == [""]:
        return [text + suffix]
    head, args, tail = parts
    argcol = col + len(head)
    lines = [head]
    fresh = True  # the current line has no argument yet
    force_break = False
    for k, arg in enumerate(args):
        piece = arg + ("," if k + 1 < len(args) else tail + suffix)
        cur_col = col if len(lines) == 1 else 0
        width = cur_col + len(lines[-1]) + (0 if fresh else 1) + len(piece)
        if not force_break and width <= LIMIT:
            lines[-1] += ("" if fresh else " ") + piece
            fresh = False
            continue
        if not fresh or force_break:
            lines.append(" " * argcol)
        sub = wrap(arg, argcol, piece[len(arg):])
        lines[-1] += sub[0]
        lines.extend(sub[1:])
        force_break = len(sub) > 1
        fresh = False
    return lines


def prototype(ret, name, decls):
    one = f"AXON_API({ret}, {name}, ({', '.join(decls)})) {{"
    if len(one) <= LIMIT:
        return [one]
    indent = " " * 10
    lines = [f"AXON_API({ret}, {name},", " " * 9 + "("]
    for k, d in enumerate(decls):
        piece = d + ("," if k + 1 < len(decls) else ")) {")
        if len(lines[-1]) + 1 + len(piece) <= LIMIT or lines[-1].endswith("("):
            lines[-1] += ("" if lines[-1].endswith("(") else " ") + piece
        else:
            lines.append(indent + piece)
    return lines


def statement(text, indent=2):
    lines = wrap(text, indent)
    return [" " * indent + lines[0]] + lines[1:]


# ---- generation -----------------------------------------------------------------


def generate(sections, funcs):
    by_name = {f.name: f for f in funcs}
    outputs = {}  # file key -> text
    names = []
    seen = {}
    for s in sections:
        if s.key in outputs:
            raise Error(f"{s.line}: file {s.key} appears twice")
        if not re.match(r"^\w+$", s.key):
            raise Error(f"{s.line}: file key {s.key!r} is no plain name")
        out = [
            f"// src/mpi/entries/{s.key}_entries.inc -- GENERATED by src/binding/gen_c_entries.py from",
            "// src/binding/c_entries.txt and src/binding/mpi_api.txt: do not edit. Change c_entries.txt",
            f"// and run `{REGENERATE}` (--check compares only).",
            f"// Included by src/mpi/{s.key}.cpp, after the functions these entry points forward to.",
        ]
        for fam in s.families:
            if not fam.lines:
                raise Error(f"{fam.line}: {fam.base} has no call")
            # Statements end in ';'; the other lines make the call.
            stmts, call = [], []
            for text, _ in fam.lines:
                if call or not text.endswith(";"):
                    call.append(text)
                else:
                    stmts.append(text)
            if not call:
                raise Error(f"{fam.line}: {fam.base}: the last lines must be the call (without ';')")
            for text, where in fam.lines[len(stmts) :]:
                if text.endswith(";"):
                    raise Error(f"{where}: {fam.base}: a statement after the call (the call ends the family)")
            call_text = " ".join(call)
            call_text = re.sub(r"\(\s+", "(", call_text)
            if fam.base not in by_name:
                raise Error(f"{fam.line}: {fam.base} is not a function of mpi_api.txt")
            out.append("")
            for c in fam.comment:
                out.append(("// " + c).rstrip())
            first = True
            for key in fam.forms:
                form = s.forms.get(key)
                if form is None:
                    known = " ".join(s.forms) or "none"
                    raise Error(f"{fam.line}: {fam.base}: file {s.key} has no form {key!r} (its forms: {known})")
                name = function_name(s, form, fam.base, fam.line)
                f = by_name.get(name)
                if f is None:
                    raise Error(f"{fam.line}: {name} (form {key} of {fam.base}) is not a function of mpi_api.txt")
                variants = [f]
                large = f.flags.get("large")
                if large:
                    if large not in by_name:
                        raise Error(f"mpi_api.txt: {name} has large={large}, which it does not describe")
                    variants.append(by_name[large])
                for v in variants:
                    if not v.exported:
                        raise Error(f"{fam.line}: {v.name} (form {key} of {fam.base}) is unexported in mpi_api.txt")
                    if v.name in seen:
                        raise Error(f"{fam.line}: {v.name} is generated twice (also by {seen[v.name]})")
                    seen[v.name] = fam.line
                    if any(p.kind == "varargs" for p in v.params):
                        raise Error(f"{fam.line}: {v.name} takes varargs")
                    values = dict(form.vars)
                    values["fn"] = f'"{v.name}"'
                    what = f"{v.name} (form {key})"
                    body = [substitute(t, values, form.line, what) for t in form.pre]
                    body += [substitute(t, values, fam.line, what) for t in stmts]
                    values["call"] = substitute(call_text, values, fam.line, what)
                    body.append(substitute(form.body, values, form.line, what))
                    used = strip_strings(" ".join(body))
                    for p in v.params:
                        if not re.search(r"\b" + re.escape(p.name) + r"\b", used):
                            raise Error(f"{fam.line}: {v.name} (form {key}): parameter {p.name} is not used")
                    if not first:
                        out.append("")
                    first = False
                    out += prototype(v.ret, v.name, [declaration(p) for p in v.params])
                    for b in body:
                        out += statement(b)
                    out.append("}")
                    names.append(v.name)
        outputs[s.key] = "\n".join(out) + "\n"
    return outputs, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--api", default=os.path.join(HERE, "mpi_api.txt"))
    ap.add_argument("--entries", default=os.path.join(HERE, "c_entries.txt"))
    ap.add_argument("--outdir", default=os.path.join(ROOT, "src", "mpi", "entries"))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the files, write nothing; exit 1 if stale")
    mode.add_argument("--list", action="store_true", help="print the names of the functions written, one a line")
    args = ap.parse_args()
    try:
        funcs = mpi_api.load(args.api)
        with open(args.entries) as fh:
            sections = parse_entries(fh.read(), shown(args.entries))
        outputs, names = generate(sections, funcs)
    except (Error, ValueError, OSError) as e:
        print(f"gen_c_entries.py: {e}", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(names))
        return 0
    stale = 0
    for key, text in outputs.items():
        path = os.path.join(args.outdir, f"{key}_entries.inc")
        try:
            with open(path) as fh:
                old = fh.read()
        except FileNotFoundError:
            old = None
        if old == text:
            continue
        if args.check:
            why = "missing" if old is None else "out of date"
            print(f"gen_c_entries.py: {shown(path)} is {why}: run {REGENERATE}", file=sys.stderr)
            stale += 1
        else:
            os.makedirs(args.outdir, exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
            print(f"wrote {shown(path)}")
    if os.path.isdir(args.outdir):
        for extra in sorted(os.listdir(args.outdir)):
            m = re.match(r"^(\w+)_entries\.inc$", extra)
            if m and m.group(1) not in outputs:
                print(f"gen_c_entries.py: {shown(os.path.join(args.outdir, extra))}: "
                      "c_entries.txt has no file section for it (remove it)", file=sys.stderr)
                stale += 1
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
