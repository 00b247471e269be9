"""Check (d) of the corpus: each mode's execution counts against its edge-mode baseline, in units every mode
measures alike (see test-suite/corpus/README.md, "What the count check compares").

The unit is the *segment*: a maximal chain of blocks b1 -> b2 -> ... -> bk in which each bi (i < k) has exactly
one real out-edge, a branch to b(i+1), and b(i+1) has no other real in-edge and is not the entry block. The
interprocedural modes split a block after each call site (and after a call that may leave abnormally before
one); every split makes exactly such a pair, so a build's segments are the same in every mode, however the
mode split its blocks. Per segment the check compares

  entries   executions that reached the segment: its head block's count (less the fork()ed children that
            resumed in the head, which re-enter mid-block rather than arrive);
  branches  the count of each branch out of its tail block, by successor index (the executions that went on
            to each successor segment);
  returns   the count of its tail's return edge, when it has one.

All are measured alike by every mode: an unsplit block's count is its entries, and split pieces pass the
entries on from the head, the branches and returns from the tail. The rest of the entries left abnormally
(exit, longjmp, an exception; less fork re-entries): where inside the segment only a mode that split there can
tell, so that is not compared, but the number is (entries - branches - returns). One exit is modelled
differently by the modes: `resume` is a return edge in edge and path mode and a termination edge in the
interprocedural modes, so where exactly one side's tail has a return edge, its returns are left out and the
executions that left the function (returns + abnormal exits = entries - branches) are compared.
"""

import re
from collections import defaultdict

# Version of the stored block counts (blocks.json.gz): 2 = segments; 3 = segments and every block's count.
FORMAT = 3


def segments(f):
    """The segments of one function record of `pathprof show --json`, in order of their head blocks:
    [{"entries", "branches": [[successor index, count]], "returns" (None without a return edge), "lines"}].
    Its blocks and edges must all have counts (an exact function)."""
    blocks = f.get("blocks", [])
    n = len(blocks)
    outs, branch_ins = defaultdict(list), defaultdict(list)
    for e in f.get("edges", []):
        outs[e["from"]].append(e)
        if e["kind"] == "branch":
            branch_ins[e["to"]].append(e)
    nxt = {}
    for x in range(n):
        o = outs[x]
        if len(o) == 1 and o[0]["kind"] == "branch":
            y = o[0]["to"]
            if y not in (0, x) and len(branch_ins[y]) == 1:
                nxt[x] = y
    fork = defaultdict(int)
    for r in f.get("fork_reentries", []):
        fork[r["block"]] += r["count"]
    continued = set(nxt.values())
    heads = [x for x in range(n) if x not in continued]
    placed = set()
    out = []

    def chain(h):
        seq = [h]
        placed.add(h)
        while seq[-1] in nxt and nxt[seq[-1]] not in placed:
            seq.append(nxt[seq[-1]])
            placed.add(seq[-1])
        return seq

    for h in heads:
        out.append(chain(h))
    for x in range(n):  # a cycle of such blocks has no head: it is unreachable, begin it at its lowest block
        if x not in placed:
            out.append(chain(x))
    out.sort(key=lambda seq: seq[0])
    return [{"entries": blocks[s[0]]["count"] - fork[s[0]],
             "branches": sorted([e["succ"], e["count"]] for e in outs[s[-1]] if e["kind"] == "branch"),
             "returns": (sum(e["count"] for e in outs[s[-1]] if e["kind"] == "return")
                         if any(e["kind"] == "return" for e in outs[s[-1]]) else None),
             "lines": sorted({ln for b in s for ln in blocks[b].get("lines", [])})} for s in out]


def aggregate(functions, tree_prefix="", agg=None):
    """Per function key (`FILE::NAME`, the file relative to the build tree): its segments per copy, keyed by the
    module's output (the object file, or the program under LTO; inline functions have one copy per module).
    A key with an inexact copy is `exact: false`. Adds to `agg` when given, so the profiles of many processes
    sum up one at a time (bash's test run writes ~10,000 traces; holding all their summaries at once ran the
    machine out of memory)."""
    agg = {} if agg is None else agg
    for f in functions:
        key = f"{(f.get('file') or '').replace(tree_prefix, '')}::{f.get('name')}"
        a = agg.setdefault(key, {"exact": True, "entry": 0, "copies": {}})
        blocks_only = f.get("mode") == "block"  # vertex profiling: block counts only, by design
        if not f.get("exact", True) or any(b.get("count") is None for b in f.get("blocks", [])) \
                or (not blocks_only and any(e.get("count") is None for e in f.get("edges", []))):
            a["exact"] = False
            continue
        # Every block's count and lines: what block mode measures, compared block by block (same CFG as edge
        # mode's: both instrument the front end's CFG and split no block in the profile).
        copy = {"blocks": [b["count"] for b in f.get("blocks", [])],
                "block_lines": [b.get("lines", []) for b in f.get("blocks", [])]}
        if blocks_only:
            a["blocks_only"] = True
        else:
            segs = segments(f)
            # Per segment counts [entries, branch counts..., returns if any]; succs [successor indices..., RET if
            # any].
            copy.update({
                "counts": [[s["entries"]] + [c for _, c in s["branches"]] + ([] if s["returns"] is None else
                                                                           [s["returns"]]) for s in segs],
                "lines": [s["lines"] for s in segs],
                "succs": [[i for i, _ in s["branches"]] + ([] if s["returns"] is None else [RET]) for s in segs]})
        a["entry"] += f.get("entry_count") or 0
        cid = (f.get("module_output") or f.get("module") or "").replace(tree_prefix, "")
        old = a["copies"].get(cid)
        if old is None:
            a["copies"][cid] = copy
        elif same_shape(old, copy):  # one module twice (profiles merged from two runs of one binary)
            if "counts" in old:
                old["counts"] = add(old["counts"], copy["counts"])
            old["blocks"] = [x + y for x, y in zip(old["blocks"], copy["blocks"])]
        else:
            a["exact"] = False  # cannot happen for one module; never compare what cannot be told apart
    return agg


RET = "ret"


def same_shape(x, y):
    if "counts" not in x or "counts" not in y:  # block counts only
        return x["block_lines"] == y["block_lines"]
    return x["lines"] == y["lines"] and x["succs"] == y["succs"]


def add(p, q):
    return [[a + b for a, b in zip(s, t)] for s, t in zip(p, q)]


def total(copies):
    """The copies' counts added up when they all have one shape, else None."""
    cs = list(copies.values())
    if any(not same_shape(c, cs[0]) for c in cs[1:]):
        return None
    out = dict(cs[0])
    for c in cs[1:]:
        out = {**out, "blocks": [x + y for x, y in zip(out["blocks"], c["blocks"])]}
        if "counts" in out and "counts" in c:
            out["counts"] = add(out["counts"], c["counts"])
    return out


def ran_copies(copies):
    """The copies some execution reached. A copy that never ran adds nothing to the copies' sum, so its shape
    (every module compiles an inline function its own way) must not keep the others from being summed: trace
    mode knows only the copies the linker kept and the traces name, edge mode every module's (fmtlib: 8
    modules' copies of do_write_float<float> in edge mode, the 3 the traces name, the others never run)."""
    return {k: c for k, c in copies.items() if any(c.get("blocks", [1]))}


def shape_difference(x, y):
    """Why two copies of a function cannot be compared segment by segment (None when they can)."""
    if len(x["lines"]) != len(y["lines"]):
        return f"{len(x['lines'])} segments, {len(y['lines'])} in the baseline"
    if x["lines"] != y["lines"]:
        i = next(i for i, (p, q) in enumerate(zip(x["lines"], y["lines"])) if p != q)
        return f"segment {i} holds lines {x['lines'][i][:5]}, {y['lines'][i][:5]} in the baseline"
    if [[i for i in s if i != RET] for s in x["succs"]] != [[i for i in s if i != RET] for s in y["succs"]]:
        return "a segment branches to other successors"
    return None


def segment_equal(cx, sx, cy, sy):
    """Counts of one segment on both sides equal; returns left out when only one side has them (`resume`)."""
    if (RET in sx) != (RET in sy):
        cx, cy = cx[:-1] if RET in sx else cx, cy[:-1] if RET in sy else cy
    return cx == cy


def compare_function(a, e):
    """(how, detail) for one function present and exact on both sides: ("equal", None), ("equal as a sum",
    None), ("differs", first differing segment) or ("not comparable", why). Copies are compared one by one when
    both builds have the same modules holding one; otherwise, or when the copies differ one by one, their sums
    are: which copy of an inline function runs depends on where the optimiser inlined it (the instrumentation
    goes in before inlining, so an inlined body counts in its caller's module's copy), and the modes' code
    changes those decisions (tinyxml2: a 5-call `SetAttribute` inlined into tinyxml2.cpp's callers in edge mode
    and called out of line, in xmltest.cpp's copy, in context mode). Every execution counts in exactly one copy,
    so the sums must agree."""
    return compare_copies(a, e, shape_difference, first_difference, segment_shape)


def compare_blocks(a, e):
    """compare_function for block mode, which measures block counts only: every block's count, copy by copy,
    or as the copies' sum."""
    if any("blocks" not in c for c in list(a["copies"].values()) + list(e["copies"].values())):
        return "not comparable", "a copy stored without block counts (an older format)"
    return compare_copies(a, e, block_shape_difference, first_block_difference, block_shape)


def segment_shape(copy):
    """What copies must share to be summed segment by segment (returns left out, as in shape_difference)."""
    return repr((copy["lines"], [[i for i in s if i != RET] for s in copy["succs"]]))


def block_shape(copy):
    return repr(copy["block_lines"])


def shape_sums(copies, shape_key):
    """The copies' counts summed per shape ({shape: sum}), or None when copies of one shape cannot be added."""
    groups = {}
    for cid, c in copies.items():
        groups.setdefault(shape_key(c), {})[cid] = c
    sums = {k: total(g) for k, g in groups.items()}
    return None if any(v is None for v in sums.values()) else sums


def first_shape_mismatch(pairs, shape_diff):
    """("not comparable", why) for the first (copy, counts, baseline counts) pair whose shapes differ, else None."""
    for cid, x, y in pairs:
        why = shape_diff(x, y)
        if why:
            return "not comparable", f"{cid}: {why}"
    return None


def compare_per_shape(ca, ce, shape_key, shape_diff, first_diff):
    """Copies of several shapes (googletest: its -fno-exceptions objects compile an inline function to 1 block,
    the others to 4), summed per shape. Every execution counts in one copy, but it may count in a copy of
    another shape in the other build (inlined into its caller's module in one, the linker's copy called in the
    other): equal per-shape sums vouch for the counts, differing ones do not prove a miscount, so they are
    reported as not comparable, never as equal."""
    sa, se = shape_sums(ca, shape_key), shape_sums(ce, shape_key)
    if not sa or not se or set(sa) != set(se):
        return "not comparable", (f"held by {len(ca)} modules, {len(ce)} in the baseline, with copies of "
                                  f"different shapes ({len(sa or ())} shapes ran, {len(se or ())} in the baseline)")
    pairs = [(f"(copies of shape {i + 1} of {len(sa)})", sa[k], se[k]) for i, k in enumerate(sorted(sa))]
    mismatch = first_shape_mismatch(pairs, shape_diff)
    if mismatch:
        return mismatch
    first = first_diff(pairs)
    if first is None:
        return "equal as a sum", None
    return "not comparable", (f"copies of {len(sa)} shapes whose per-shape sums differ ({first['copy']}, segment "
                              f"{first['segment']}: {first['count']} against {first['edge']})")


def compare_copies(a, e, shape_diff, first_diff, shape_key):
    """The verdict of compare_function/compare_blocks, with the unit's shape check, first difference and shape
    key (copies of one key can be summed)."""
    ca, ce = a["copies"], e["copies"]
    ta, te = total(ca), total(ce)
    if set(ca) != set(ce) and (ta is None or te is None):
        ca, ce = ran_copies(ca), ran_copies(ce)
        ta, te = (total(ca), total(ce)) if ca and ce else (None, None)
        if set(ca) != set(ce) and (ta is None or te is None):
            return compare_per_shape(ca, ce, shape_key, shape_diff, first_diff)
    if set(ca) == set(ce):
        pairs = [(cid, ca[cid], ce[cid]) for cid in sorted(ca)]
    else:
        pairs = [("(all copies)", ta, te)]
    mismatch = first_shape_mismatch(pairs, shape_diff)
    if mismatch:
        return mismatch
    first = first_diff(pairs)
    if first is None:
        return "equal", None
    if len(pairs) > 1 and ta is not None and te is not None and first_diff([("", ta, te)]) is None:
        return "equal as a sum", None
    if len(pairs) > 1 and (ta is None or te is None) and \
            compare_per_shape(ran_copies(ca), ran_copies(ce), shape_key, shape_diff, first_diff)[0] == "equal as a sum":
        return "equal as a sum", None
    return "differs", first


def block_shape_difference(x, y):
    if x["block_lines"] != y["block_lines"]:
        return f"{len(x['block_lines'])} blocks with other lines than the baseline's {len(y['block_lines'])}"
    return None


def first_block_difference(pairs):
    """The first block whose count differs (reported in the segment fields: one block, one count)."""
    for cid, x, y in pairs:
        diff = [i for i, (p, q) in enumerate(zip(x["blocks"], y["blocks"])) if p != q]
        if diff:
            i = diff[0]
            return {"copy": cid, "segment": i, "lines": x["block_lines"][i][:6], "count": [x["blocks"][i]],
                    "edge": [y["blocks"][i]], "segments_differing": len(diff)}
    return None


def first_difference(pairs):
    """The first segment whose counts differ, over (copy, counts, baseline counts) pairs of one shape."""
    for cid, x, y in pairs:
        diff = [i for i, (p, q, sp, sq) in enumerate(zip(x["counts"], y["counts"], x["succs"], y["succs"]))
                if not segment_equal(p, sp, q, sq)]
        if diff:
            i = diff[0]
            return {"copy": cid, "segment": i, "lines": x["lines"][i][:6], "count": x["counts"][i],
                    "edge": y["counts"][i], "segments_differing": len(diff)}
    return None


def compare(agg, base, skip=(), system=lambda key: False, explain=lambda key, a, e: None):
    """Functions whose segment counts differ from the baseline's. A function whose segments differ in number,
    source lines or successors from the baseline's (the two builds compiled it to different code) cannot be
    compared: it is listed under `not_comparable` with the reason, never counted as equal. Counts are
    [entries, branch counts..., returns] per segment. `skip`: keys the manifest documents as behaving differently from
    run to run; `system(key)`: functions counted apart (see corpus.is_system_header); `explain(key, a, e)`: why a
    differing function legitimately differs (the two builds ran it a different number of times), or None — an
    explained function is listed under `explained`, with the reason and both entry counts, not as a mismatch."""
    mismatches, not_comparable, explained = [], [], []
    compared = unmatched = system_n = as_sum = 0
    for key, a in agg.items():
        # An LTO link numbers the statics it renames (`gl_linked_search_from_to.430`): the manifest names them
        # without the number.
        if key in skip or re.sub(r"\.\d+$", "", key) in skip:
            continue
        e = base.get(key)
        if e is None:
            unmatched += 1
            continue
        if not a["exact"] or not e["exact"] or not a["copies"] or not e["copies"]:
            continue
        if system(key):
            system_n += 1
            continue
        how, detail = (compare_blocks if a.get("blocks_only") or e.get("blocks_only") else compare_function)(a, e)
        if how == "not comparable":
            not_comparable.append({"function": key, "why": detail})
            continue
        compared += 1
        as_sum += how == "equal as a sum"
        if how == "differs":
            why = explain(key, a, e)
            if why:
                explained.append({"function": key, "why": why, "entries": a.get("entry"), "edge": e.get("entry")})
            else:
                mismatches.append({"function": key, **detail})
    return {"compared": compared, "unmatched": unmatched, "system": system_n, "equal_as_sum": as_sum,
            "explained": len(explained), "explained_samples": explained[:20],
            "mismatched": len(mismatches),
            "samples": mismatches[:10], "not_comparable": len(not_comparable),
            "not_comparable_samples": not_comparable[:10]}
