#!/usr/bin/env python3
"""File-level import circles in the workspace's Rust crates.

Reads every `crates/*/src/**/*.rs` file, takes each path it names inside its
own crate (`crate::a::b`, `super::x`, `self::y`, in `use` lines and in code),
resolves it to the file that defines it (following `pub use` re-exports of a
`lib.rs` or `mod.rs`, so `crate::SqlSession` counts as the file that defines
`SqlSession`, not `lib.rs`), and reports every strongly connected group of
two or more files: a group of files each of which reaches the others through
such references. A file's own submodules declared with `mod x;` are not
references; comments, strings and a trailing `#[cfg(test)] mod tests` are not
read.

Usage: scripts/import_cycles.py [--max N] [--edges] [CRATE_DIR ...]
Exit status 1 when more than N circles are found (default 0), so CI can hold
the line; the report lists each circle's files.
"""

import argparse
import os
import re
import sys


def strip(text):
    """The code of a Rust file without comments, string literals and a
    trailing test module."""
    m = re.search(r"\n#\[cfg\(test\)\]\s*\n\s*(pub(\(crate\))?\s+)?mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            i += len(re.match(r"'(\\.[^']*|[^\\'])'", text[i:]).group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Crate:
    def __init__(self, root):
        self.root = root
        self.src = os.path.join(root, "src")
        self.files = {}  # module path tuple -> file
        for dirpath, _, names in os.walk(self.src):
            for name in names:
                if name.endswith(".rs"):
                    path = os.path.join(dirpath, name)
                    mod = self.module_of(path)
                    if mod is not None:
                        self.files[mod] = path
        self.code = {f: strip(open(f, encoding="utf-8").read()) for f in self.files.values()}
        self.reexports = {}  # (module, name) -> module path the name comes from
        for mod, f in self.files.items():
            for target, name in self.pub_uses(mod, self.code[f]):
                self.reexports[(mod, name)] = target
            # `#[macro_export]` puts a macro at the crate root; it is the
            # file that writes it that `crate::name!` depends on.
            for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*(\w+)", self.code[f]):
                self.reexports[((), m.group(1))] = mod

    def module_of(self, path):
        rel = os.path.relpath(path, self.src)
        parts = rel[:-3].split(os.sep)
        if parts == ["lib"] or parts == ["main"]:
            return ()
        if parts[0] == "bin":
            return None  # binaries are crates of their own
        if parts[-1] == "mod":
            parts = parts[:-1]
        return tuple(parts)

    def pub_uses(self, mod, code):
        for m in re.finditer(r"\bpub(\([^)]*\))?\s+use\s+([^;]+);", code):
            for path in expand(m.group(2)):
                segs = path.split("::")
                name = segs[-1]
                if " as " in name:
                    name = name.split(" as ")[1].strip()
                    segs[-1] = segs[-1].split(" as ")[0].strip()
                if name in ("self", "*"):
                    continue
                target = self.absolute(mod, segs)
                if target is not None:
                    yield target, name

    def absolute(self, mod, segs):
        """The module path `segs` (as written in module `mod`) names, as a
        tuple of segments from the crate root; None for another crate's."""
        segs = [s.strip() for s in segs if s.strip()]
        if not segs:
            return None
        if segs[0] == "crate":
            return tuple(segs[1:])
        if segs[0] in ("super", "self"):
            base = list(mod) if not self.is_file_module_leaf(mod) else list(mod)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
            return tuple(base + segs)
        # A path starting with a child module of `mod` (Rust 2018 paths).
        if tuple(list(mod) + [segs[0]]) in self.files:
            return tuple(list(mod) + segs)
        return None

    def is_file_module_leaf(self, mod):
        return True

    def resolve(self, path, seen=None):
        """The file defining the item at absolute `path`."""
        seen = seen or set()
        for k in range(len(path), -1, -1):
            prefix = path[:k]
            if prefix in self.files:
                rest = path[k:]
                if rest and (prefix, rest[0]) in self.reexports and (prefix, rest[0]) not in seen:
                    seen.add((prefix, rest[0]))
                    target = self.reexports[(prefix, rest[0])]
                    return self.resolve(tuple(target) + rest[1:], seen)
                return self.files[prefix]
        return None

    def edges(self):
        out = {f: set() for f in self.files.values()}
        for mod, f in self.files.items():
            code = self.code[f]
            paths = set()
            for m in re.finditer(r"\buse\s+([^;]+);", code):
                paths.update(expand(m.group(1)))
            for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", code):
                paths.add(m.group(1))
            for p in paths:
                segs = [s.split(" as ")[0].strip() for s in p.split("::")]
                if segs[-1] in ("self", "*"):
                    segs = segs[:-1]
                target = self.absolute(mod, segs)
                if target is None:
                    continue
                dest = self.resolve(target)
                if dest and dest != f:
                    out[f].add(dest)
        return out


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", " ", tree.strip())
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix = tree[:i]
    depth, parts, cur = 0, [], ""
    for ch in tree[i + 1 : tree.rfind("}")]:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        for e in expand(p):
            out.append(prefix + e if e != "self" else prefix.rstrip(":"))
    return out


def sccs(graph):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=0, help="circles allowed before exit 1")
    ap.add_argument("--edges", action="store_true", help="print each circle's references")
    ap.add_argument("crates", nargs="*")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    roots = a.crates or sorted(
        os.path.join(here, "..", "crates", d)
        for d in os.listdir(os.path.join(here, "..", "crates"))
        if os.path.isdir(os.path.join(here, "..", "crates", d, "src"))
    )
    total = 0
    for root in roots:
        crate = Crate(root)
        graph = crate.edges()
        circles = sccs(graph)
        name = os.path.basename(os.path.normpath(root))
        for c in circles:
            total += 1
            rel = [os.path.relpath(f, crate.src) for f in c]
            print(f"{name}: circle of {len(c)} files: {', '.join(rel)}")
            if a.edges:
                for f in c:
                    for g in sorted(graph[f] & set(c)):
                        print(f"    {os.path.relpath(f, crate.src)} -> {os.path.relpath(g, crate.src)}")
    print(f"{total} file-level import circle(s)")
    return 1 if total > a.max else 0


if __name__ == "__main__":
    sys.exit(main())
