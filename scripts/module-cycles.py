#!/usr/bin/env python3
"""Fails when a crate's top-level modules import each other in a cycle longer than two.

Usage: scripts/module-cycles.py crates/opkit-apiserver/src

A top-level module is a `src/NAME.rs` file or a `src/NAME/` directory; an import is any
`crate::NAME` path in its files. Cycles of two modules (a pair that use each other) are
allowed; longer ones are what make a crate's layers unreadable.
"""
import os
import re
import sys


def modules(src):
    out = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry in ("lib.rs", "main.rs"):
            continue
        if entry.endswith(".rs"):
            out.setdefault(entry[:-3], []).append(path)
        elif os.path.isdir(path):
            for root, _, files in os.walk(path):
                out.setdefault(entry, []).extend(
                    os.path.join(root, f) for f in files if f.endswith(".rs")
                )
    return out


def graph(src):
    mods = modules(src)
    edges = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = open(f, encoding="utf-8").read()
            for used in re.findall(r"crate::([a-z_][a-z0-9_]*)", text):
                if used in mods and used != m:
                    edges[m].add(used)
    return edges


def sccs(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    failed = False
    for src in sys.argv[1:]:
        for comp in sccs(graph(src)):
            if len(comp) > 2:
                failed = True
                print(f"{src}: modules import each other in a cycle: {', '.join(comp)}")
    if failed:
        sys.exit(1)
    print("no import cycle longer than two modules in " + ", ".join(sys.argv[1:]))


main()
