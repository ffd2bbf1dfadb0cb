"""Import circles between the modules of each crate: every `crate::a::b`
and `super::x` path in a module's file (comments included: a doc link is
a dependency a reader follows), resolved to the longest module prefix that
exists, makes an edge; each strongly connected set of more than one module
is printed, and any makes the exit status 1.

Usage: python3 .ci/circles.py REPO"""
import os, re, sys
root = sys.argv[1]
found = 0
for crate in sorted(os.listdir(os.path.join(root, 'crates'))):
    src = os.path.join(root, 'crates', crate, 'src')
    if not os.path.isdir(src): continue
    mods = {}
    for dp, _, fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            rel = os.path.relpath(os.path.join(dp, f), src)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib', 'main'): rel = rel[:-1]
            mods[tuple(rel)] = os.path.join(dp, f)
    def resolve(path):
        for k in range(len(path), -1, -1):
            if tuple(path[:k]) in mods: return tuple(path[:k])
        return None
    edges = {m: set() for m in mods}
    for m, f in mods.items():
        text = open(f).read()
        for mm in re.finditer(r'\b(crate|super)((?:::\w+)+)', text):
            parts = mm.group(2).split('::')[1:]
            if mm.group(1) == 'crate':
                base = []
            else:
                base = list(m[:-1]) if not f.endswith(('mod.rs','lib.rs')) else list(m[:-1])
                # `super` from a/b.rs (module a::b) is a; from a/b/mod.rs (a::b) is a
                while parts and parts[0] == 'super':
                    base = base[:-1]; parts = parts[1:]
            t = resolve(base + parts)
            if t is not None and t != m and not (len(t) < len(m) and m[:len(t)] == t and t == ()):
                edges[m].add(t)
    # Tarjan
    idx = {}; low = {}; st = []; on = set(); out = []; c = [0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges[v]:
            if w not in idx: sc(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(comp)
    for v in edges:
        if v not in idx: sc(v)
    for comp in out:
        found += 1
        print(crate, ' <-> '.join('::'.join(x) or '(root)' for x in comp))
print(f'{found} circles')
sys.exit(1 if found else 0)
