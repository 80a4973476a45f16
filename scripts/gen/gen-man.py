#!/usr/bin/env python3
"""Generates the man pages from the documents users read, so the two cannot drift apart.

  libbobox(7)     README.md: intro, Install and use, Settings, Safety, Memory, Thread pinning,
                  Limits; docs/api.md: the C++ operators
  bobox-run(1)    `bobox-run --help` (synopsis, options, environment, exit status) and the
                  README's pinning settings table and examples
  bobox_*(3)      include/bobox.h (prototypes) and docs/api.md (one page per row of its table;
                  the other functions of a row are symbolic links to that page); a function
                  the table lacks gets a page of its own from the comment above it

Usage: gen-man.py --out DIR --help-text FILE [--prefix P] [--version V]   writes DIR/man{1,3,7}/
       gen-man.py --list                                                   the pages, one a line
Only the Python standard library. A section or function it cannot find is an error."""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANUAL = "bobox-malloc manual"


def die(msg):
    sys.exit("gen-man.py: " + msg)


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


# ---- inline markdown -> roff ---------------------------------------------------------------

def esc(text):
    """Plain text for roff: backslashes, and every non-ASCII character as a groff escape."""
    text = text.replace("\\", "\\e")
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def inline(md):
    out, i = [], 0
    pattern = re.compile(r"`([^`]+)`|!\[[^\]]*\]\([^)]*\)|\[([^\]]+)\]\(([^)]*)\)|\*\*(.+?)\*\*|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")
    for m in pattern.finditer(md):
        out.append(esc(md[i:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + esc(m.group(1)).replace("-", "\\-") + "\\fR")
        elif m.group(2) is not None:
            out.append(inline(m.group(2)))
            # a file of the source tree, which an installed man page's reader may not have
            if m.group(3) == m.group(2) and not m.group(3).startswith(("http:", "https:")):
                out.append(" in the bobox-malloc sources")
        elif m.group(4) is not None:
            out.append("\\fB" + inline(m.group(4)) + "\\fR")
        elif m.group(5) is not None:
            out.append("\\fI" + inline(m.group(5)) + "\\fR")
        i = m.end()
    out.append(esc(md[i:]))
    return "".join(out)


def line(text):
    """A text line that roff cannot take for a request."""
    return "\\&" + text if text[:1] in (".", "'") else text


# ---- block markdown -> roff ----------------------------------------------------------------

def split_row(row):
    """Cells of a table row: split on | outside code spans."""
    cells, cur, code = [], "", False
    for c in row.strip().strip("|"):
        if c == "`":
            code = not code
        if c == "|" and not code:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += c
    cells.append(cur.strip())
    return cells


# Column headers that need no label in front of their cell.
PLAIN_COLUMNS = {"meaning", "behaviour", "holds", "checks", "topic", "served by", "role"}


def table(rows):
    head = split_row(rows[0])
    out = []
    for row in rows[2:]:
        cells = split_row(row)
        out += [".TP", line(inline(cells[0]))]
        parts = []
        for name, cell in zip(head[1:], cells[1:]):
            parts.append(inline(cell) if name.lower() in PLAIN_COLUMNS else "\\fI" + inline(name) + ":\\fR " + inline(cell))
        for k, part in enumerate(parts):
            if k:
                out.append(".br")
            out.append(line(part))
    return out


def blocks(md):
    """Markdown blocks: ('code', lines), ('table', rows), ('item', depth, text), ('para', text),
    ('sub', title)."""
    lines = md.split("\n")
    i, res = 0, []
    while i < len(lines):
        ln = lines[i]
        if not ln.strip():
            i += 1
        elif ln.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            res.append(("code", lines[i + 1:j]))
            i = j + 1
        elif ln.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            res.append(("table", lines[i:j]))
            i = j
        elif ln.startswith("#"):
            res.append(("sub", ln.lstrip("#").strip()))
            i += 1
        elif re.match(r"^( *)[-*] ", ln) or re.match(r"^ *\d+\. ", ln):
            indent = len(ln) - len(ln.lstrip())
            text = re.sub(r"^ *([-*]|\d+\.) ", "", ln)
            j = i + 1
            while j < len(lines) and lines[j].strip() and not re.match(r"^ *([-*]|\d+\.) ", lines[j]) \
                    and len(lines[j]) - len(lines[j].lstrip()) > indent:
                text += " " + lines[j].strip()
                j += 1
            res.append(("item", indent // 2, text))
            i = j
        else:
            j = i
            text = []
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("```", "|", "#")) \
                    and not re.match(r"^ *([-*]|\d+\.) ", lines[j]):
                text.append(lines[j].strip())
                j += 1
            res.append(("para", " ".join(text)))
            i = j
    return res


def render(md, skip=lambda b: False):
    out, depth = [], 0
    for b in blocks(md):
        if skip(b):
            continue
        kind = b[0]
        want = b[1] if kind == "item" else 0
        while depth < want:
            out.append(".RS 2")
            depth += 1
        while depth > want:
            out.append(".RE")
            depth -= 1
        if kind == "code":
            out += [".PP", ".RS 4", ".nf"] + [line(esc(x)) for x in b[1]] + [".fi", ".RE"]
        elif kind == "table":
            out += [".PP"] + table(b[1])
        elif kind == "item":
            out += [".IP \\(bu 2", line(inline(b[2]))]
        elif kind == "sub":
            out += [".SS " + inline(b[1])]
        elif kind == "para":
            if b[1].startswith("!["):
                continue
            out += [".PP", line(inline(b[1]))]
    out += [".RE"] * depth
    return out


# ---- sources -------------------------------------------------------------------------------

def readme_sections():
    text = read("README.md")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    intro = re.sub(r"^# .*\n", "", parts[0], count=1)
    return intro, {parts[k].strip(): parts[k + 1] for k in range(1, len(parts), 2)}


def section(sections, prefix):
    for title, body in sections.items():
        if title.startswith(prefix):
            return title, body
    die("README.md has no section starting with '## %s'" % prefix)


def pin_table(sections):
    _, body = section(sections, "Thread pinning")
    for b in blocks(body):
        if b[0] == "table" and "`BOBOX_PIN`" in b[1][2]:
            return b[1]
    die("README.md's Thread pinning section has no settings table")


def prototypes():
    """Public functions of include/bobox.h: name -> declaration."""
    text = re.sub(r"/\*.*?\*/", "", read("include/bobox.h"), flags=re.S)
    protos = {}
    for m in re.finditer(r"^([A-Za-z_][\w \*]*?\b(bobox_\w+)\s*\([^;]*\));", text, flags=re.M):
        protos[m.group(2)] = re.sub(r"\s+", " ", m.group(1))
    if not protos:
        die("no prototypes found in include/bobox.h")
    return protos


def comments():
    """The comment right above each declaration of include/bobox.h: name -> text."""
    res = {}
    for m in re.finditer(r"/\*((?:(?!\*/).)*)\*/\n[^\n]*?\b(bobox_\w+)\s*[({]", read("include/bobox.h"), flags=re.S):
        res[m.group(2)] = re.sub(r"\s*\n\s*\*?\s*", " ", m.group(1)).strip()
    return res


def sentence(text):
    return text[:1].upper() + text[1:] if text[:1].islower() and not text.startswith("glibc") else text


def stats_struct():
    m = re.search(r"^struct bobox_stats \{.*?^\};", read("include/bobox.h"), flags=re.S | re.M)
    return m.group(0).split("\n") if m else []


def api_rows():
    """docs/api.md's table: [(names as written, behaviour)]."""
    for b in blocks(read("docs/api.md")):
        if b[0] == "table":
            rows = []
            for row in b[1][2:]:
                cells = split_row(row)
                names = [re.sub(r"\(.*", "", n) for n in re.findall(r"`([^`]+)`", cells[0])]
                rows.append((names, cells[1]))
            return rows
    die("docs/api.md has no table")


def api_pages():
    """One page per row of docs/api.md that names functions of include/bobox.h:
    [(page name, [functions]), behaviour]. Every prototype must be on a page."""
    protos = prototypes()
    pages, placed = [], set()
    for names, behaviour in api_rows():
        funcs = []
        for n in names:
            f = n if n.startswith("bobox_") else "bobox_" + n
            if f in protos and f not in funcs:
                funcs.append(f)
        if funcs:
            pages.append((funcs, behaviour))
            placed.update(funcs)
    notes = comments()
    for f in sorted(set(protos) - placed):
        if f not in notes:
            die("include/bobox.h declares %s with no comment above it, and docs/api.md's table does "
                "not describe it: add a row" % f)
        pages.append(([f], None))
    return pages, protos


def page_list():
    pages, _ = api_pages()
    names = ["man1/bobox-run.1", "man7/libbobox.7"]
    for funcs, _ in pages:
        names += ["man3/%s.3" % f for f in funcs]
    return names


# ---- pages ---------------------------------------------------------------------------------

def header(name, sect, version):
    return ['.\\" Generated by scripts/gen/gen-man.py from README.md, docs/api.md, include/bobox.h',
            '.\\" and bobox-run --help; edit those, not this file.',
            '.TH %s %s "" "bobox-malloc %s" "%s"' % (name.upper(), sect, esc(version), MANUAL)]


def libbobox7(version, prefix, pages):
    intro, sections = readme_sections()
    out = header("libbobox", 7, version)
    out += [".SH NAME", "libbobox \\- drop-in malloc replacement and thread-pinning shim for unmodified "
            "multi-threaded Linux programs", ".SH SYNOPSIS", ".nf",
            "\\fBLD_PRELOAD=%s/lib/libbobox.so\\fR \\fIprogram\\fR ..." % esc(prefix),
            "\\fBbobox-run\\fR [\\fIoptions\\fR] \\fB\\-\\-\\fR \\fIprogram\\fR ...",
            "\\fBcc\\fR \\fIapp.c\\fR \\fB$(pkg-config \\-\\-cflags \\-\\-libs bobox)\\fR", ".fi",
            ".SH DESCRIPTION"]
    out += render(intro, skip=lambda b: b[0] == "code" or (b[0] == "para" and b[1].startswith("Contents:")))
    for title, man_title in (("Install and use", "INSTALL AND USE"), ("Settings", "ENVIRONMENT"),
                             ("Safety", "SAFETY"), ("Memory", "MEMORY"), ("Thread pinning", "THREAD PINNING"),
                             ("Limits", "LIMITS")):
        _, body = section(sections, title)
        out += [".SH " + man_title] + render(body)
    out += [".SH FUNCTIONS", ".PP", "Declared in \\fI<bobox.h>\\fR and exported by both libraries; "
            "\\fBlibbobox.so\\fR also exports the malloc family under the standard names, without the prefix:"]
    for funcs, _ in pages:
        out += [".TP", "\\fB%s\\fR(3)" % esc(funcs[0]), ", ".join("\\fB%s\\fR" % esc(f) for f in funcs)]
    api = read("docs/api.md")
    prose = api[api.index("C++ `operator new`"):]
    out += [".SH C++ OPERATORS"] + render(prose)
    out += [".SH FILES", ".TP", "\\fI%s/lib/libbobox.so\\fR" % esc(prefix), "the allocator, for LD_PRELOAD or -lbobox",
            ".TP", "\\fI%s/lib/libbobox.a\\fR" % esc(prefix), "the allocator with only the bobox_ names",
            ".TP", "\\fI%s/lib/libbobox-pin.so\\fR" % esc(prefix), "the thread-pinning shim",
            ".TP", "\\fI%s/lib/pkgconfig/bobox.pc\\fR" % esc(prefix), "compiler and linker flags",
            ".TP", "\\fI%s/include/bobox.h\\fR" % esc(prefix), "the bobox_ declarations",
            ".SH SEE ALSO", "\\fBbobox-run\\fR(1), " + ", ".join("\\fB%s\\fR(3)" % esc(f[0]) for f, _ in pages)
            + ", \\fBmalloc\\fR(3), \\fBmallopt\\fR(3), \\fBtaskset\\fR(1), \\fBnumactl\\fR(8), \\fBpkg-config\\fR(1)"]
    return out


def parse_help(text):
    """bobox-run --help: usage lines, description, 'options:' and 'environment:' entries, and
    the trailing paragraphs."""
    lines = text.rstrip("\n").split("\n")
    usage = []
    i = 0
    while i < len(lines) and lines[i].strip():
        usage.append(re.sub(r"^(usage:)?\s*", "", lines[i]))
        i += 1
    desc, lists, tail, cur = [], {}, [], None
    for ln in lines[i:]:
        m = re.match(r"^(\w[\w ]*):$", ln)
        if m:
            cur = lists.setdefault(m.group(1), [])
            continue
        if cur is not None and ln.startswith("  "):
            m = re.match(r"^  (\S.*?)(?:\s{2,}(.*))?$", ln)
            if ln.startswith("   ") and cur:
                cur[-1][1].append(ln.strip())
            elif m:
                cur.append([m.group(1), [m.group(2)] if m.group(2) else []])
            continue
        if not ln.strip():
            if cur is not None and cur:
                cur = None
            continue
        (desc if not lists else tail).append(ln.strip())
    if not usage or "options" not in lists:
        die("bobox-run --help: no usage or no 'options:' list")
    return usage, " ".join(desc), lists, tail


def bobox_run1(version, help_text):
    usage, desc, lists, tail = parse_help(help_text)
    _, sections = readme_sections()
    out = header("bobox-run", 1, version)
    out += [".SH NAME", "bobox-run \\- run a program with the Bobox allocator and thread pinning",
            ".SH SYNOPSIS", ".nf"] + [line(esc(u).replace("-", "\\-")) for u in usage] + [".fi",
            ".SH DESCRIPTION", ".PP", line(esc(desc))]
    rest = [t for t in tail if not t.startswith("Exit status:")]
    if rest:
        out += [".PP", line(esc(" ".join(rest)))]
    out += [".SH OPTIONS"]
    for opt, text in lists["options"]:
        out += [".TP", "\\fB%s\\fR" % esc(opt).replace("-", "\\-"), line(esc(" ".join(text)))]
    out += [".SH ENVIRONMENT", ".PP", "The shim reads these; the options above set them for the program."]
    out += table(pin_table(sections))
    for name, text in lists.get("environment", []):
        if not any(name.split("=")[0] in r for r in pin_table(sections)[2:]):
            out += [".TP", "\\fB%s\\fR" % esc(name), line(esc(" ".join(text)))]
    for title, entries in lists.items():  # any further list of --help (e.g. "domains:")
        if title in ("options", "environment"):
            continue
        out += [".SH " + esc(title.upper())]
        for name, text in entries:
            out += [".TP", "\\fB%s\\fR" % esc(name).replace("-", "\\-"), line(esc(" ".join(text)))]
    status = [t for t in tail if t.startswith("Exit status:")]
    if status:
        out += [".SH EXIT STATUS", ".PP", line(esc(sentence(status[0][len("Exit status:"):].strip())))]
    _, pin = section(sections, "Thread pinning")
    codes = [b for b in blocks(pin) if b[0] == "code"]
    if codes:
        out += [".SH EXAMPLES", ".PP", ".RS 4", ".nf"] + [line(esc(x)) for x in codes[0][1]] + [".fi", ".RE"]
    out += [".SH SEE ALSO", "\\fBlibbobox\\fR(7), \\fBtaskset\\fR(1), \\fBnumactl\\fR(8), \\fBsched_setaffinity\\fR(2)"]
    return out


def api3(version, funcs, behaviour, protos):
    std = [f[len("bobox_"):] for f in funcs]
    out = header(funcs[0], 3, version)
    out += [".SH NAME", ", ".join(esc(f) for f in funcs) + " \\- " +
            ("the Bobox allocator's " + ", ".join(esc(s) for s in std)
             if not funcs[0].startswith(("bobox_owns", "bobox_get_stats", "bobox_check_heap", "bobox_prof_dump", "bobox_stats_json"))
             else "Bobox allocator extensions"),
            ".SH SYNOPSIS", ".nf", ".B #include <bobox.h>", ".PP"]
    out += [line(esc(protos[f]) + ";") for f in funcs]
    if "bobox_get_stats" in funcs:
        out += [""] + [line(esc(x)) for x in stats_struct()]
    out += [".fi", ".PP", "Link with \\fB\\-lbobox\\fR: \\fBpkg-config \\-\\-cflags \\-\\-libs bobox\\fR.",
            ".SH DESCRIPTION", ".PP", line(inline(sentence(behaviour or ""))) + "."]
    if behaviour is None:
        out.pop()  # the header comments are the description of a function docs/api.md lacks
        out += [line(esc(sentence(comments()[f]))) for f in funcs]
    if not funcs[0].startswith(("bobox_owns", "bobox_get_stats", "bobox_check_heap", "bobox_prof_dump", "bobox_stats_json")):
        out += [".PP", "\\fBlibbobox.so\\fR exports each also under its standard name (%s), and so replaces "
                "the program's when it is preloaded or linked with \\fB\\-lbobox\\fR; \\fBlibbobox.a\\fR "
                "has only the \\fBbobox_\\fR names, which work beside the system's \\fBmalloc\\fR."
                % ", ".join("\\fB%s\\fR" % esc(s) for s in std)]
    out += [".SH SEE ALSO", "\\fBlibbobox\\fR(7), \\fBmalloc\\fR(3)"]
    return out


def write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--help-text", help="a file holding the output of bobox-run --help")
    ap.add_argument("--prefix", default="/usr/local")
    ap.add_argument("--version", default="0")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print("\n".join(page_list()))
        return
    if not a.out or not a.help_text:
        die("--out and --help-text are required")
    pages, protos = api_pages()
    with open(a.help_text, encoding="utf-8") as f:
        help_text = f.read()
    write(os.path.join(a.out, "man7/libbobox.7"), libbobox7(a.version, a.prefix, pages))
    write(os.path.join(a.out, "man1/bobox-run.1"), bobox_run1(a.version, help_text))
    for funcs, behaviour in pages:
        write(os.path.join(a.out, "man3/%s.3" % funcs[0]), api3(a.version, funcs, behaviour, protos))
        for alias in funcs[1:]:
            link = os.path.join(a.out, "man3/%s.3" % alias)
            if os.path.lexists(link):
                os.remove(link)
            os.symlink("%s.3" % funcs[0], link)


if __name__ == "__main__":
    main()
