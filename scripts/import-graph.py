#!/usr/bin/env python3
"""The workspace's import graph, module by module: which module names which.

Resolves every `crate::`, `super::` and `self::` path (and `ctxd_*::` paths into the
workspace's other crates) in each crate's non-test sources to the module it lands in,
then prints the crate graph, the module graph's cycles (strongly connected components of
more than one module) and its upward arrows: a module naming one of a higher layer of
its own crate (LAYERS below). Exit status 1 when there is a cycle or an upward arrow.

    python3 scripts/import-graph.py            # summary
    python3 scripts/import-graph.py --edges    # every arrow as well
"""
import os
import re
import sys

ROOT = os.environ.get("CTXD_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = {  # crate name as code names it -> source root
    "ctxd_protocol": "protocol/src",
    "ctxd_pipeline": "pipeline/src",
    "ctxd_fs": "fs/src",
    "ctxd_providers": "providers/src",
    "ctxd_store": "store/src",
    "ctxd_engine": "engine/src",
    "ctxd": "daemon/src",
    "ctx_client": "client/src",
}
# Within a crate, modules of a later group may name those of an earlier one, never the
# reverse (a module not listed is free). The first path segment decides.
LAYERS = {
    "ctxd_engine": [
        ["git", "validate", "watch", "discovery", "import", "hooks"],
        ["engine"],
    ],
    # The daemon crate before the engine and its edges left it (for measuring old trees).
    "ctxd": [
        ["clock", "limits", "saturate", "sync", "error", "safe_read", "git", "pipeline",
         "store", "watch", "discovery", "import", "providers", "hooks"],
        ["engine"],
        ["rpc"],
        ["daemon", "main"],
    ],
}

PATH = re.compile(r"\b(crate|super|self|ctxd_[a-z]+|ctx_client)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
MOD = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;", re.M)
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;')
CFG_TEST = re.compile(r"#\[cfg\((?:test|any\(test[^)]*\))\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)")


def strip_tests(text):
    """Drops `#[cfg(test)] mod x { ... }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+[a-z_0-9]+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, k = 0, m.end() - 1
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    out.append(text[i:])
    return "".join(out)


def modules(crate):
    """module path (tuple) -> file, following `mod x;` and `#[path]`, skipping test modules."""
    root = os.path.join(ROOT, CRATES[crate])
    found = {}

    def walk(path, file):
        found[path] = file
        text = open(file).read()
        tests = set(CFG_TEST.findall(text))
        explicit = {name: rel for rel, name in PATH_ATTR.findall(text)}
        base = os.path.dirname(file)
        own_dir = base if os.path.basename(file) in ("lib.rs", "mod.rs", "main.rs") else os.path.join(base, os.path.basename(file)[:-3])
        for name in MOD.findall(text):
            if name in tests:
                continue
            if name in explicit:
                f = os.path.join(base, explicit[name])
            else:
                f = os.path.join(own_dir, name + ".rs")
                if not os.path.exists(f):
                    f = os.path.join(own_dir, name, "mod.rs")
            if os.path.exists(f):
                walk(path + (name,), f)

    walk((), os.path.join(root, "lib.rs"))
    main = os.path.join(root, "main.rs")
    if os.path.exists(main):
        walk(("main",), main)
    return found


ITEM = re.compile(r"^\s*pub(?:\([a-z]+\))?\s+(?:async\s+|const\s+|unsafe\s+)*(?:fn|struct|enum|const|static|type|trait|union)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
USE = re.compile(r"^\s*pub(?:\([a-z]+\))?\s+use\s+([^;]+);", re.M)


def reexports(mods):
    """Per module: a name it re-exports -> the module defining it (one level of `pub use`
    from a child or sibling module, braces and globs included). A re-exported module
    (`pub use stages::budget;`) maps its name to the module itself, under the key
    `("mod", name)`, so that paths through it land where the compiler lands."""
    defined = {p: set(ITEM.findall(open(f).read())) for p, f in mods.items()}
    out = {}
    for path, file in mods.items():
        table = {}
        for spec in USE.findall(open(file).read()):
            spec = " ".join(spec.split())
            m = re.match(r"(?:(crate|self|super)::)?((?:[a-z_0-9]+::)*)(\{.*\}|\*|[A-Za-z_][A-Za-z0-9_]*(?: as [A-Za-z_0-9]+)?)$", spec)
            if not m:
                continue
            head, mid, tail = m.groups()
            base = () if head == "crate" else (path[:-1] if head == "super" else path)
            target = base + tuple(x for x in mid.split("::") if x)
            if target not in mods:
                continue
            if tail == "*":
                for name in defined.get(target, ()):
                    table[name] = target
                continue
            for part in tail.strip("{}").split(","):
                part = part.strip()
                if not part or "::" in part:
                    continue
                orig = part.split(" as ")[0].strip()
                name = part.split(" as ")[-1].strip()
                if target + (orig,) in mods:
                    table[("mod", name)] = target + (orig,)
                    continue
                table[name] = target
        out[path] = table
    return out


def resolve(mods, segments, rx=None):
    """The module `segments` land in: the longest module prefix (through re-exported
    modules), then one re-export."""
    best, k_best, cur = None, 0, ()
    for k, seg in enumerate(segments, 1):
        if cur + (seg,) in mods:
            cur = cur + (seg,)
        elif rx is not None and ("mod", seg) in rx.get(cur, {}):
            cur = rx[cur][("mod", seg)]
        else:
            break
        best, k_best = cur, k
    start = best if best is not None else ()
    if rx is not None and k_best < len(segments):
        hop = rx.get(start, {}).get(segments[k_best])
        if hop is not None:
            return hop
    return best


def graph():
    present = [c for c in CRATES if os.path.exists(os.path.join(ROOT, CRATES[c], "lib.rs"))]
    all_mods = {c: modules(c) for c in present}
    rxs = {c: reexports(m) for c, m in all_mods.items()}
    edges, crate_edges = set(), set()
    for crate, mods in all_mods.items():
        for path, file in mods.items():
            text = strip_tests(open(file).read())
            for head, rest in PATH.findall(text):
                segs = rest.strip(":").split("::")
                if head in CRATES and head != crate:
                    crate_edges.add((crate, head))
                    target_crate, base = head, ()
                elif head == "crate" or head == crate:
                    target_crate, base = crate, ()
                elif head == "self":
                    target_crate, base = crate, path
                elif head == "super":
                    target_crate = crate
                    base = path[:-1]
                    while segs and segs[0] == "super":
                        segs, base = segs[1:], base[:-1]
                else:
                    continue
                target = resolve(all_mods[target_crate], list(base) + segs, rxs[target_crate])
                if target is None or target_crate != crate:
                    continue
                if target == path or target == ():
                    continue
                # a module naming its own descendants or ancestors is structure, not an arrow
                if target[: len(path)] == path or path[: len(target)] == target:
                    continue
                edges.add((crate, path, target))
    return all_mods, edges, crate_edges


def sccs(nodes, adj):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                strong(w)
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
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)
    return out


def layer(crate, path):
    for i, group in enumerate(LAYERS.get(crate, [])):
        if path and path[0] in group:
            return i
    return None


def main():
    all_mods, edges, crate_edges = graph()
    print("crates (a -> b: a names b):")
    for a, b in sorted(crate_edges):
        print(f"  {a} -> {b}")
    # a module stands for itself and its descendants' files only through its own file
    adj = {}
    for crate, a, b in edges:
        adj.setdefault((crate, a), set()).add((crate, b))
    nodes = [(c, p) for c, mods in all_mods.items() for p in mods]
    cycles = [c for c in sccs(nodes, adj) if len(c) > 1]
    upward = []
    for crate, a, b in sorted(edges):
        la, lb = layer(crate, a), layer(crate, b)
        if la is not None and lb is not None and lb > la:
            upward.append((crate, a, b))
    print(f"modules: {len(nodes)}, arrows: {len(edges)}")
    print(f"cycles: {len(cycles)}")
    for c in cycles:
        print("  " + " <-> ".join(f"{k}::{'::'.join(p)}" for k, p in sorted(c)))
    print(f"upward arrows: {len(upward)}")
    for crate, a, b in upward:
        print(f"  {crate}::{'::'.join(a)} -> {'::'.join(b)}")
    if "--edges" in sys.argv:
        for crate, a, b in sorted(edges):
            print(f"  {crate}: {'::'.join(a)} -> {'::'.join(b)}")
    return 1 if cycles or upward else 0


if __name__ == "__main__":
    sys.exit(main())
