#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""userlib-graph: how libshiftu's files depend on each other.

    scripts/userlib-graph.py [--dot] [USERLIB_DIR]

Two graphs over the library's C files (X.c, with its header X.h when it has
one), from the built objects and the sources of USERLIB_DIR (default:
userlib/ next to this script; `make lib` first):

  calls     X -> Y when X.o needs a symbol Y.o defines (nm: what the linker
            joins; static inline functions of a header are not calls)
  includes  X -> Y when X.c, or X.h, includes Y.h

For each it prints the number of files, of linked pairs, the groups of
files that reach each other (strongly connected components: a cycle when
bigger than one file) and, with --dot, the graph for Graphviz.  Issue 18
asks for no cycle in either; the closing notes quote this output before and
after.  Exit status 0, whatever the graphs; 2 on bad usage.
"""
import glob
import os
import re
import subprocess
import sys


def objects(d):
    """{file: (defined symbols, undefined symbols)} from X.o."""
    out = {}
    for o in sorted(glob.glob(os.path.join(d, "*.o"))):
        name = os.path.basename(o)[:-2]
        if not os.path.exists(os.path.join(d, name + ".c")):
            continue
        defs, undefs = set(), set()
        nm = subprocess.run(["nm", o], capture_output=True, text=True, check=True)
        for line in nm.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefs.add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRVWtdbr" and parts[1].isupper():
                defs.add(parts[2])
        out[name] = (defs, undefs)
    return out


def call_edges(objs):
    owner = {}
    for f, (defs, _) in objs.items():
        for s in defs:
            owner.setdefault(s, f)
    edges = {f: set() for f in objs}
    for f, (_, undefs) in objs.items():
        for s in undefs:
            g = owner.get(s)
            if g and g != f:
                edges[f].add(g)
    return edges


INC = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def include_edges(d, files):
    edges = {f: set() for f in files}
    for f in files:
        for src in (f + ".c", f + ".h"):
            p = os.path.join(d, src)
            if not os.path.exists(p):
                continue
            with open(p, encoding="utf-8", errors="replace") as fh:
                for h in INC.findall(fh.read()):
                    h = os.path.basename(h)
                    if h in files and h != f:
                        edges[f].add(h)
    return edges


def sccs(edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def report(title, edges, dot):
    n = len(edges)
    pairs = {tuple(sorted((a, b))) for a in edges for b in edges[a]}
    cycles = [c for c in sccs(edges) if len(c) > 1]
    print(f"{title}: {n} files, {len(pairs)} of {n * (n - 1) // 2} pairs linked, "
          f"{sum(len(e) for e in edges.values())} edges")
    if not cycles:
        print(f"{title}: no cycle")
    for c in cycles:
        inside = sum(1 for a in c for b in edges[a] if b in c)
        print(f"{title}: a cycle of {len(c)} files, {inside} edges among them: {' '.join(c)}")
    if dot:
        print(f"digraph {title} {{")
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f'  "{a}" -> "{b}";')
        print("}")


def main(argv):
    dot = "--dot" in argv
    args = [a for a in argv if a != "--dot"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    d = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "..", "userlib")
    objs = objects(d)
    if not objs:
        print(f"userlib-graph: no objects in {d}: make lib first", file=sys.stderr)
        return 1
    report("calls", call_edges(objs), dot)
    report("includes", include_edges(d, set(objs)), dot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
