#!/usr/bin/env python3
"""Integer programs over vertex elimination orders of one linearized computational graph.

Why this exists: `docs/elimination.md` reports, for the corpus's graphs of 20 or more
intermediates, how far the best elimination found is from what can be proven. This script
measures what a mixed-integer solver (HiGHS, `pip install highspy`) proves on the same graphs,
so that the claim "no method here proves them" is a measurement, not a guess. It is an offline
experiment: nothing in the build, the tests or the engine depends on it.

Input: a graph written by `cargo xtask elim-report --dump DIR` (one line per vertex, `x`
independent, `z` intermediate, `y` dependent; then one line per edge, `SOURCE TARGET VALUE`
with VALUE `1`, `-1`, `cNUMBER` for a constant or `vID` for a run-time value).

Two programs, both over the order in which vertices are eliminated (binary order variables
with transitivity), whose edges are the pairs (u, v) joined by a path whose interior is
eliminated before u and v:

* `markowitz`: the literature's problem: every intermediate eliminated, every edge a
  run-time value, cost = multiplications (|predecessors| x |successors| per elimination).
  Not xaifb's cost model (no folding of units and constants, no additions, no propagation),
  but the problem the integer-programming approach to optimal derivative accumulation solves.
  With `--strong`, each elimination also satisfies |P||S| >= |P| + |S| - 1 and |P|, |S| >= 1.
  `--dp` checks the optimum by dynamic programming over the sets of eliminated vertices
  (graphs of up to about 17 intermediates).
* `lower-bound`: a relaxation of xaifb's run-time cost model in tangent mode over vertex
  elimination sequences (intermediates eliminated, dependents with out-edges cut, partial
  sequences included): it counts only operations certain to happen whatever the values fold
  to: one multiplication per product of two run-time factors, one addition per run-time
  summand beyond the first merged into an edge, two operations per run-time remainder edge,
  and for a vertex with run-time in- and out-edges in the graph, a product when it is
  eliminated (|P||S| >= |P| + |S| - 1 over its run-time edges) or a run-time out-edge when it
  is kept (such edges never fold away: a run-time factor is never multiplied by a zero).
  Its optimum is a lower bound of the cost of every vertex elimination sequence provided no
  two paths of constant edges join the same vertices and no edge is the constant zero (the
  script checks both and says so otherwise).

Output: one line per program solved: the LP relaxation's value, and the solver's status, best
solution and proven bound after the time limit (one thread).
"""
import argparse
import itertools
import sys
import time

import numpy as np
import highspy


def load(path):
    kinds, edges = [], []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 1:
                kinds.append(p[0])
            elif len(p) == 3:
                edges.append((int(p[0]), int(p[1]), p[2]))
    return kinds, edges


def reachability(n, succ):
    reach = [set() for _ in range(n)]
    for v in reversed(topological(succ, n)):
        for w in succ[v]:
            reach[v].add(w)
            reach[v] |= reach[w]
    return reach


def constant_reconvergence(n, edges):
    """True when two distinct paths of non-run-time edges join the same pair of vertices."""
    succ = [set() for _ in range(n)]
    for a, b, val in edges:
        if not val.startswith('v'):
            succ[a].add(b)
    order = topological(succ, n)
    for s in range(n):
        paths = {s: 1}  # paths from s, counted up to 2, in topological order
        for v in order:
            if v in paths:
                for w in succ[v]:
                    paths[w] = min(2, paths.get(w, 0) + paths[v])
        if any(p >= 2 for w, p in paths.items() if w != s):
            return True
    return False


def topological(succ, n):
    indeg = [0] * n
    for v in range(n):
        for w in succ[v]:
            indeg[w] += 1
    stack = [v for v in range(n) if indeg[v] == 0]
    order = []
    while stack:
        v = stack.pop()
        order.append(v)
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                stack.append(w)
    return order


class Program:
    """Columns in [0, upper] (binary where asked) and rows `lower <= sum <= upper`."""

    def __init__(self):
        self.cost, self.upper, self.binary, self.rows = [], [], [], []

    def var(self, cost=0.0, binary=False, upper=1.0):
        self.cost.append(cost)
        self.upper.append(upper)
        self.binary.append(binary)
        return len(self.cost) - 1

    def at_least(self, rhs, terms):
        self.rows.append((rhs, None, terms))

    def at_most(self, rhs, terms):
        self.rows.append((None, rhs, terms))

    def solve(self, time_limit, relax):
        h = highspy.Highs()
        h.setOptionValue('output_flag', False)
        h.setOptionValue('time_limit', float(time_limit))
        h.setOptionValue('threads', 1)
        n = len(self.cost)
        h.addVars(n, np.zeros(n), np.array(self.upper, dtype=float))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(self.cost))
        if not relax:
            ints = [i for i in range(n) if self.binary[i]]
            h.changeColsIntegrality(len(ints), np.array(ints, dtype=np.int32),
                                    np.array([highspy.HighsVarType.kInteger] * len(ints)))
        inf = highspy.kHighsInf
        for lower, upper, terms in self.rows:
            h.addRow(-inf if lower is None else float(lower), inf if upper is None else float(upper),
                     len(terms), np.array([t[0] for t in terms], dtype=np.int32),
                     np.array([float(t[1]) for t in terms]))
        start = time.time()
        h.run()
        info = h.getInfo()
        out = {'status': h.modelStatusToString(h.getModelStatus()),
               'value': round(info.objective_function_value, 3),
               'seconds': round(time.time() - start, 1), 'columns': n, 'rows': len(self.rows)}
        if not relax:
            out['bound'] = round(info.mip_dual_bound, 3)
        return out


class Order:
    """Binary order variables over `inner` with transitivity; `before(a, b)` is (constant, terms)."""

    def __init__(self, prog, inner):
        self.o = {}
        for a, b in itertools.combinations(inner, 2):
            self.o[(a, b)] = prog.var(binary=True)
        for a, b, c in itertools.combinations(inner, 3):
            for p, q, r in ((a, b, c), (a, c, b)):
                const, terms = 0, []
                for x, y in ((p, q), (q, r), (r, p)):
                    k, t = self.before(x, y)
                    const += k
                    terms += t
                prog.at_most(2 - const, terms)

    def before(self, a, b):
        if (a, b) in self.o:
            return (0, [(self.o[(a, b)], 1.0)])
        return (1, [(self.o[(b, a)], -1.0)])


def at_least_sum(prog, target, parts, slack):
    """target >= sum(parts) - slack, every part and the target (constant, terms)."""
    const, terms = 0, []
    for k, t in parts:
        const += k
        terms += t
    tk, tt = target
    if not tt:
        return
    prog.at_least(const - slack - tk, tt + [(i, -c) for i, c in terms])


def fresh(prog, cost=0.0):
    return (0, [(prog.var(cost), 1.0)])


def markowitz(kinds, edges, strong):
    n = len(kinds)
    succ = [set() for _ in range(n)]
    for a, b, _ in edges:
        succ[a].add(b)
    reach = reachability(n, succ)
    inner = [v for v in range(n) if kinds[v] == 'z']
    inner_set = set(inner)
    prog = Program()
    order = Order(prog, inner)
    present = lambda w, x: order.before(w, x) if x in inner_set else (1, [])
    original = {(a, b) for a, b, _ in edges}
    exists = {}
    for u in range(n):
        for v in reach[u]:
            exists[(u, v)] = (1, []) if (u, v) in original else fresh(prog)
    for w in inner:
        preds = [u for u in range(n) if w in reach[u]]
        succs = sorted(reach[w])
        p = {u: fresh(prog) for u in preds}
        s = {v: fresh(prog) for v in succs}
        for u in preds:
            at_least_sum(prog, p[u], [exists[(u, w)], present(w, u)], 1)
        for v in succs:
            at_least_sum(prog, s[v], [exists[(w, v)], present(w, v)], 1)
        products = []
        for u in preds:
            for v in succs:
                z = fresh(prog, 1.0)
                at_least_sum(prog, z, [p[u], s[v]], 1)
                at_least_sum(prog, exists[(u, v)], [z], 0)
                products.append(z)
        if strong:
            prog.at_least(1, [t for u in preds for t in p[u][1]])
            prog.at_least(1, [t for v in succs for t in s[v][1]])
            terms = [t for z in products for t in z[1]]
            terms += [(i, -c) for u in preds for i, c in p[u][1]]
            terms += [(i, -c) for v in succs for i, c in s[v][1]]
            prog.at_least(-1, terms)
    return prog


def markowitz_dp(kinds, edges):
    n = len(kinds)
    inner = [v for v in range(n) if kinds[v] == 'z']
    index = {v: i for i, v in enumerate(inner)}
    succ0 = [set() for _ in range(n)]
    for a, b, _ in edges:
        succ0[a].add(b)

    def graph(eliminated):
        out = {}
        for u in range(n):
            if u in index and eliminated >> index[u] & 1:
                continue
            seen, stack, targets = set(), list(succ0[u]), set()
            while stack:
                x = stack.pop()
                if x in seen:
                    continue
                seen.add(x)
                if x in index and eliminated >> index[x] & 1:
                    stack.extend(succ0[x])
                else:
                    targets.add(x)
            out[u] = targets
        return out

    best = {0: 0}
    full = (1 << len(inner)) - 1
    for state in range(full + 1):
        if state not in best:
            continue
        g = graph(state)
        preds = {}
        for u, targets in g.items():
            for t in targets:
                preds.setdefault(t, set()).add(u)
        for w in inner:
            if state >> index[w] & 1:
                continue
            c = best[state] + len(preds.get(w, ())) * len(g[w])
            nxt = state | 1 << index[w]
            if c < best.get(nxt, 1 << 62):
                best[nxt] = c
    return best[full]


def lower_bound(kinds, edges):
    n = len(kinds)
    succ = [set() for _ in range(n)]
    for a, b, _ in edges:
        succ[a].add(b)
    reach = reachability(n, succ)
    dependent = lambda v: kinds[v] == 'y'
    inner = [v for v in range(n) if kinds[v] == 'z' or (dependent(v) and succ[v])]
    inner_set = set(inner)
    prog = Program()
    eliminated = {w: prog.var(binary=True) for w in inner}
    order = Order(prog, inner)
    for a, b in itertools.permutations(inner, 2):
        # a vertex kept is ordered after every eliminated one
        k, t = order.before(a, b)
        prog.at_least(-k, t + [(eliminated[a], -1.0), (eliminated[b], 1.0)])
    pred_present = lambda w, u: order.before(w, u) if u in inner_set else (1, [])
    succ_present = lambda w, v: order.before(w, v) if (v in inner_set and not dependent(v)) else (1, [])
    original = {(a, b): val for a, b, val in edges}
    run_time = lambda val: val.startswith('v')
    # existence and run-time-ness of (u, v) when used (for a dependent target, also at its cut)
    exists, runtime, exists_cut, runtime_cut = {}, {}, {}, {}
    for u in range(n):
        for v in reach[u]:
            val = original.get((u, v))
            exists[(u, v)] = (1, []) if val is not None else fresh(prog)
            runtime[(u, v)] = (1, []) if val is not None and run_time(val) else fresh(prog)
            if v in inner_set and dependent(v):
                exists_cut[(u, v)] = (1, []) if val is not None else fresh(prog)
                runtime_cut[(u, v)] = (1, []) if val is not None and run_time(val) else fresh(prog)
    contributions = {}
    # a run-time in-edge (out-edge) of the original graph leaves one at its vertex for good:
    # contracting it multiplies a run-time factor, which never folds (no zero edge)
    runtime_in = {v for (a, v), val in original.items() if run_time(val)}
    runtime_out = {a for (a, v), val in original.items() if run_time(val)}
    products_at, remainder_from = {}, {}
    for w in inner:
        preds = [u for u in range(n) if w in reach[u]]
        succs = sorted(reach[w])
        cut = dependent(w)
        pr, sr = {}, {}
        for u in preds:
            e = exists_cut[(u, w)] if cut else exists[(u, w)]
            r = runtime_cut[(u, w)] if cut else runtime[(u, w)]
            p = fresh(prog)
            at_least_sum(prog, p, [(0, [(eliminated[w], 1.0)]), e, pred_present(w, u)], 2)
            rp = fresh(prog)
            at_least_sum(prog, rp, [p, r], 1)
            pr[u] = (rp, p)  # (run-time predecessor present, predecessor present)
        for v in succs:
            s = fresh(prog)
            at_least_sum(prog, s, [(0, [(eliminated[w], 1.0)]), exists[(w, v)], succ_present(w, v)], 2)
            r = fresh(prog)
            at_least_sum(prog, r, [s, runtime[(w, v)]], 1)
            sr[v] = (r, s)  # (run-time successor present, successor present)
        for u in preds:
            for v in succs:
                z = fresh(prog)
                at_least_sum(prog, z, [pr[u][1], sr[v][1]], 1)
                at_least_sum(prog, exists[(u, v)], [z], 0)
                q = fresh(prog)
                at_least_sum(prog, q, [z, pr[u][0]], 1)
                at_least_sum(prog, q, [z, sr[v][0]], 1)
                at_least_sum(prog, runtime[(u, v)], [q], 0)
                contributions.setdefault((u, v), []).append(q)
                if v in inner_set and dependent(v):
                    zc = fresh(prog)
                    at_least_sum(prog, zc, [z, order.before(w, v)], 1)
                    at_least_sum(prog, exists_cut[(u, v)], [zc], 0)
                    qc = fresh(prog)
                    at_least_sum(prog, qc, [zc, q], 1)
                    at_least_sum(prog, runtime_cut[(u, v)], [qc], 0)
                m = fresh(prog, 1.0)
                at_least_sum(prog, m, [pr[u][0], sr[v][0]], 1)
                products_at.setdefault(w, []).append(m)
        if w in runtime_in and w in runtime_out:
            # eliminated: at least one run-time predecessor and successor, so
            # |P||S| >= |P| + |S| - 1; kept: nothing (counted below)
            terms = [t for m in products_at.get(w, []) for t in m[1]]
            terms += [(i, -c) for u in pr for i, c in pr[u][0][1]]
            terms += [(i, -c) for v in sr for i, c in sr[v][0][1]]
            prog.at_least(0, terms + [(eliminated[w], 1.0)])
    for (u, v), qs in contributions.items():
        a = prog.var(1.0, upper=float(len(qs)))  # an edge may take many summands
        prog.at_least((1 if (u, v) in original else 0) - 1,
                      [(a, 1.0)] + [(i, -c) for _, t in qs for i, c in t])
    for u in range(n):
        for v in reach[u]:
            r = prog.var(2.0)
            k, t = runtime[(u, v)]
            terms = [(r, 1.0)] + [(i, -c) for i, c in t]
            if u in inner_set:
                terms.append((eliminated[u], 1.0))
            if v in inner_set and not dependent(v):
                terms.append((eliminated[v], 1.0))
            prog.at_least(k, terms)
            remainder_from.setdefault(u, []).append(r)
    for w in range(n):
        if w in runtime_in and w in runtime_out and w in inner_set:
            # eliminated: a product of two run-time factors; kept: a run-time out-edge
            prog.at_least(1, [t for m in products_at.get(w, []) for t in m[1]]
                          + [(r, 1.0) for r in remainder_from.get(w, [])])
        elif w in runtime_out and w not in inner_set:
            prog.at_least(1, [(r, 1.0) for r in remainder_from.get(w, [])])
    return prog


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('program', choices=['markowitz', 'lower-bound'])
    ap.add_argument('graphs', nargs='+')
    ap.add_argument('--seconds', type=float, default=300.0, help='time limit per solve')
    ap.add_argument('--strong', action='store_true', help='markowitz: degree inequalities')
    ap.add_argument('--dp', action='store_true', help='markowitz: check by dynamic programming')
    args = ap.parse_args()
    for path in args.graphs:
        kinds, edges = load(path)
        name = path.rsplit('/', 1)[-1]
        print(f'{name}: {kinds.count("z")} intermediates, {len(edges)} edges', flush=True)
        if args.program == 'markowitz':
            build = lambda: markowitz(kinds, edges, args.strong)
            if args.dp:
                print(f'  dynamic programming optimum: {markowitz_dp(kinds, edges)}', flush=True)
        else:
            if constant_reconvergence(len(kinds), edges) or any(
                    val.startswith('c') and float(val[1:]) == 0.0 for _, _, val in edges):
                print('  constant paths reconverge or an edge is zero: no bound claimed')
                continue
            build = lambda: lower_bound(kinds, edges)
        print(f'  LP relaxation: {build().solve(args.seconds, True)}', flush=True)
        print(f'  integer program: {build().solve(args.seconds, False)}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
