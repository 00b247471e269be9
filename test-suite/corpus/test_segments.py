"""Self-test of the corpus count check (segments.py): the same execution profiled by modes that split blocks
differently compares equal, and a miscount is caught. Run: python3 test-suite/corpus/test_segments.py
(run.sh runs it before the corpus). The records are `pathprof show --json` function records written by hand
from the execution each test describes."""

import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import segments  # noqa: E402


def record(blocks, edges, abnormal=(), fork=(), name="f", output="f.o"):
    """A function record: blocks [(lines, count)], edges [(from, to, kind, succ, count)] (kind "branch" or
    "return", to = len(blocks) for a return), abnormal exits [(block, count)], fork re-entries likewise."""
    return {"name": name, "file": "f.c", "module": "f.c", "module_output": output, "exact": True,
            "entry_count": blocks[0][1],
            "blocks": [{"id": i, "lines": ls, "count": c} for i, (ls, c) in enumerate(blocks)],
            "edges": [{"from": f, "to": t, "kind": k, **({"succ": s} if k == "branch" else {}), "count": c}
                      for f, t, k, s, c in edges],
            "abnormal_exits": [{"block": b, "count": c} for b, c in abnormal],
            "fork_reentries": [{"block": b, "count": c} for b, c in fork]}


def compile_string(returns=761, exited=101, call_block=862):
    """sed's compile_string, called 862 times; its call of compile_program exits 101 times (bad_prog ->
    exit on the suite's script-error tests). Edge mode sees one block; context mode splits it after the call
    (call block: lines up to the call on 1521; return-site block: 1521 on)."""
    edge = record([([1510, 1512, 1521, 1522, 1528], 862)], [(0, 1, "return", None, 761)], abnormal=[(0, 101)])
    context = record([([1510, 1512, 1521], call_block), ([1521, 1522, 1528], returns)],
                     [(0, 1, "branch", 0, returns), (1, 2, "return", None, returns)], abnormal=[(0, exited)])
    return edge, context


def compare(a, b):
    return segments.compare(segments.aggregate(a), segments.aggregate(b))


class SplitCallBlocks(unittest.TestCase):
    def test_same_execution_compares_equal(self):
        edge, context = compile_string()
        r = compare([context], [edge])
        self.assertEqual((r["compared"], r["mismatched"], r["not_comparable"]), (1, 0, 0))

    def test_line_maxima_disagreed(self):
        # The old check (largest block count per line): line 1522 is 862 in edge mode, 761 in context mode.
        edge, context = compile_string()
        line_max = lambda f: max(b["count"] for b in f["blocks"] if 1522 in b["lines"])  # noqa: E731
        self.assertEqual((line_max(edge), line_max(context)), (862, 761))

    def test_miscounted_returns_are_caught(self):
        # Flow-consistent but wrong: one return counted as an exit (760 returns, 102 exits).
        edge, context = compile_string(returns=760, exited=102)
        r = compare([context], [edge])
        self.assertEqual(r["mismatched"], 1)
        self.assertEqual((r["samples"][0]["count"], r["samples"][0]["edge"]), ([862, 760], [862, 761]))

    def test_miscounted_entries_are_caught(self):
        edge, context = compile_string(call_block=861, exited=100)
        self.assertEqual(compare([context], [edge])["mismatched"], 1)


def diamond(left, right, split_left=False):
    """if (c) { g(); x; } else y; return — entered 10 times, `left` times down the then-branch. Split: g() is
    a call site, so the then-block is two blocks."""
    if not split_left:
        return record([([1], 10), ([2, 3], left), ([4], right), ([5], 10)],
                      [(0, 1, "branch", 0, left), (0, 2, "branch", 1, right), (1, 3, "branch", 0, left),
                       (2, 3, "branch", 0, right), (3, 4, "return", None, 10)])
    return record([([1], 10), ([2], left), ([2, 3], left), ([4], right), ([5], 10)],
                  [(0, 1, "branch", 0, left), (0, 3, "branch", 1, right), (1, 2, "branch", 0, left),
                   (2, 4, "branch", 0, left), (3, 4, "branch", 0, right), (4, 5, "return", None, 10)])


class Branches(unittest.TestCase):
    def test_split_diamond_equals_unsplit(self):
        self.assertEqual(compare([diamond(7, 3, split_left=True)], [diamond(7, 3)])["mismatched"], 0)

    def test_swapped_branch_counts_are_caught(self):
        r = compare([diamond(6, 4, split_left=True)], [diamond(7, 3)])
        self.assertEqual(r["mismatched"], 1)
        self.assertEqual(r["samples"][0]["segment"], 0)  # the branch out of the first segment: [10, 6, 4]

    def test_skipped_functions_match_without_the_lto_rename_number(self):
        lto_static = lambda c: {**diamond(c, 10 - c, split_left=True), "name": "search.430"}
        a, b = segments.aggregate([lto_static(6)]), segments.aggregate([lto_static(7)])
        self.assertEqual(segments.compare(a, b)["mismatched"], 1)
        self.assertEqual(segments.compare(a, b, skip={"f.c::search"})["mismatched"], 0)
        self.assertEqual(segments.compare(a, b, skip={"f.c::searc"})["mismatched"], 1)

    def test_other_code_is_not_comparable_and_fails(self):
        other = record([([1], 10), ([5], 10)], [(0, 1, "branch", 0, 10), (1, 2, "return", None, 10)])
        r = compare([other], [diamond(7, 3)])
        self.assertEqual((r["compared"], r["not_comparable"]), (0, 1))
        self.assertFalse(corpus.counts_check(r, "edge")["ok"])


class Exits(unittest.TestCase):
    def resume(self, edge_mode, n):
        """`invoke g()` run 9 times, n of them unwinding into a cleanup that ends in `resume`: a return edge in
        edge mode, a termination edge in the interprocedural modes."""
        edges = [(0, 1, "branch", 0, 9 - n), (0, 2, "branch", 1, n), (1, 3, "return", None, 9 - n)]
        if edge_mode:
            return record([([1], 9), ([2], 9 - n), ([3], n)], edges + [(2, 3, "return", None, n)])
        return record([([1], 9), ([2], 9 - n), ([3], n)], edges, abnormal=[(2, n)])

    def test_resume_modelled_either_way_compares_equal(self):
        self.assertEqual(compare([self.resume(False, 6)], [self.resume(True, 6)])["mismatched"], 0)

    def test_resume_miscount_is_caught(self):
        self.assertEqual(compare([self.resume(False, 5)], [self.resume(True, 6)])["mismatched"], 1)

    def test_fork_reentry_in_a_split_piece(self):
        # A fork()ed child resumes after a call in the block once: edge mode adds it to the block's count,
        # the split mode to the return-site block's. Entries (4) and returns (5) agree.
        edge = record([([1, 2], 5)], [(0, 1, "return", None, 5)], fork=[(0, 1)])
        split = record([([1], 4), ([2], 5)], [(0, 1, "branch", 0, 4), (1, 2, "return", None, 5)], fork=[(1, 1)])
        self.assertEqual(compare([split], [edge])["mismatched"], 0)


class Copies(unittest.TestCase):
    def test_copies_of_different_shapes_are_compared_one_by_one(self):
        a = [diamond(7, 3, split_left=True), dict(diamond(5, 5), module_output="g.o")]
        b = [diamond(7, 3), dict(diamond(5, 5), module_output="g.o")]
        self.assertEqual(compare(a, b)["mismatched"], 0)
        b[1] = dict(diamond(4, 6), module_output="g.o")
        r = compare(a, b)
        self.assertEqual((r["mismatched"], r["samples"][0]["copy"]), (1, "g.o"))

    def test_executions_moved_between_copies_compare_as_a_sum(self):
        # An inline function with a copy in f.o and g.o: 5 executions inlined into f.o's callers in one build,
        # called out of line (g.o's copy, kept by the linker) in the other. 1 call from g.o in both.
        a = [diamond(4, 1), dict(diamond(1, 0), module_output="g.o")]
        b = [diamond(0, 0), dict(diamond(5, 1), module_output="g.o")]
        r = compare(a, b)
        self.assertEqual((r["mismatched"], r["equal_as_sum"]), (0, 1))
        # The same move with one execution lost is still caught, and its first differing copy named.
        b[1] = dict(diamond(4, 1), module_output="g.o")
        r = compare(a, b)
        self.assertEqual((r["mismatched"], r["equal_as_sum"], r["samples"][0]["copy"]), (1, 0, "f.o"))


    def test_profiles_summed_one_at_a_time_equal_their_sum(self):
        # Two processes of one binary (one module): summed file by file into one aggregate, as the trace check
        # does, they equal the two summed at once: 20 entries, 9 down the then-branch.
        acc = segments.aggregate([diamond(7, 3)])
        self.assertIs(segments.aggregate([diamond(2, 8)], "", acc), acc)
        self.assertEqual(acc, segments.aggregate([diamond(7, 3), diamond(2, 8)]))
        self.assertEqual((acc["f.c::f"]["entry"], acc["f.c::f"]["copies"]["f.o"]["blocks"]), (20, [20, 9, 11, 20]))
        r = segments.compare(acc, segments.aggregate([diamond(7, 3), diamond(3, 7)]))
        self.assertEqual(r["mismatched"], 1)

    def test_copies_that_never_ran_do_not_block_the_sum(self):
        # Trace mode names only f.o's copy; edge mode has g.o's and h.o's too, compiled to other code (the
        # branch folded away), never run. The copies that ran are compared by their sum.
        never = [record([([1], 0), ([5], 0)], [(0, 1, "branch", 0, 0), (1, 2, "return", None, 0)], output=m)
                 for m in ("g.o", "h.o")]
        r = compare([diamond(7, 3)], [diamond(7, 3)] + never)
        self.assertEqual((r["compared"], r["mismatched"], r["not_comparable"]), (1, 0, 0))
        # A miscount in the copy that ran is still caught.
        r = compare([diamond(6, 4)], [diamond(7, 3)] + never)
        self.assertEqual((r["mismatched"], r["samples"][0]["copy"]), (1, "f.o"))
        # Copies that ran in the same modules are compared one by one, whatever their shapes.
        r = compare([diamond(7, 3), never[0]], [diamond(7, 3)] + never)
        self.assertEqual((r["compared"], r["mismatched"], r["not_comparable"]), (1, 0, 0))
        # Copies that ran in other modules with other shapes still cannot be summed.
        ran = record([([1], 1), ([5], 1)], [(0, 1, "branch", 0, 1), (1, 2, "return", None, 1)], output="g.o")
        r = compare([diamond(7, 3)], [diamond(6, 3), ran])
        self.assertEqual(r["not_comparable"], 1)


class CopiesOfSeveralShapes(unittest.TestCase):
    """googletest: an inline function compiled to 4 blocks in most objects and to 1 in the -fno-exceptions ones;
    the inliner moves executions between copies of one shape from build to build."""

    @staticmethod
    def tall(left, right, output):
        """if (c) x; else y; — entered left + right times."""
        n = left + right
        return record([([1], n), ([2, 3], left), ([4], right), ([5], n)],
                      [(0, 1, "branch", 0, left), (0, 2, "branch", 1, right), (1, 3, "branch", 0, left),
                       (2, 3, "branch", 0, right), (3, 4, "return", None, n)], output=output)

    @staticmethod
    def folded(n, output):
        return record([([1, 5], n)], [(0, 1, "return", None, n)], output=output)

    def test_same_modules_compare_per_shape_sums(self):
        a = [self.tall(5, 2, "f.o"), self.tall(1, 1, "g.o"), self.folded(4, "h.o")]
        b = [self.tall(3, 1, "f.o"), self.tall(3, 2, "g.o"), self.folded(4, "h.o")]
        r = compare(a, b)
        self.assertEqual((r["compared"], r["mismatched"], r["equal_as_sum"], r["not_comparable"]), (1, 0, 1, 0))
        # One execution lost in a copy of the tall shape: caught, the first differing copy named.
        b[1] = self.tall(3, 3, "g.o")
        r = compare(a, b)
        self.assertEqual((r["mismatched"], r["equal_as_sum"], r["samples"][0]["copy"]), (1, 0, "f.o"))
        # ... and in the folded copy.
        b[1], b[2] = self.tall(3, 2, "g.o"), self.folded(5, "h.o")
        self.assertEqual(compare(a, b)["mismatched"], 1)

    def test_other_modules_compare_per_shape_sums(self):
        a = [self.tall(6, 3, "f.o"), self.folded(4, "h.o")]
        b = [self.tall(2, 1, "f.o"), self.tall(4, 2, "g.o"), self.folded(4, "h.o")]
        r = compare(a, b)
        self.assertEqual((r["compared"], r["equal_as_sum"], r["not_comparable"]), (1, 1, 0))

    def test_sums_that_differ_per_shape_vouch_for_nothing(self):
        # An execution counted in a copy of the other shape (inlined in one build, the linker's copy in the
        # other) cannot be told from a miscount: not comparable, a failure, never equal.
        a = [self.tall(6, 3, "f.o"), self.folded(4, "h.o")]
        b = [self.tall(4, 3, "f.o"), self.tall(1, 0, "g.o"), self.folded(5, "h.o")]
        r = compare(a, b)
        self.assertEqual((r["compared"], r["mismatched"], r["not_comparable"]), (0, 0, 1))
        self.assertIn("per-shape sums differ", r["not_comparable_samples"][0]["why"])
        self.assertFalse(corpus.counts_check(r, "edge")["ok"])
        # A shape that ran in one build only.
        r = compare([self.tall(6, 3, "f.o")], [self.tall(6, 2, "f.o"), self.folded(1, "h.o")])
        self.assertEqual(r["not_comparable"], 1)


class KeptCalls(unittest.TestCase):
    """Trace mode keeps every call of a const/pure function (sed: gl_sockets_startup 6 vs 1 entries)."""

    def startup(self, n, name="gl_sockets_startup"):
        return record([([142], n)], [(0, 1, "return", None, n)], name=name)

    def compare(self, trace, edge, kept):
        return corpus.compare_counts(segments.aggregate([trace]), segments.aggregate([edge]), (), kept)

    def test_more_entries_of_a_kept_callee_are_explained(self):
        r = self.compare(self.startup(6), self.startup(1), {"gl_sockets_startup"})
        self.assertEqual((r["mismatched"], r["explained"]), (0, 1))
        self.assertEqual((r["explained_samples"][0]["entries"], r["explained_samples"][0]["edge"]), (6, 1))
        self.assertTrue(corpus.counts_check(r, "edge")["ok"])

    def test_fewer_entries_or_another_function_still_fail(self):
        # The optimiser only removes such calls: fewer entries in the trace build is a miscount.
        r = self.compare(self.startup(1), self.startup(6), {"gl_sockets_startup"})
        self.assertEqual((r["mismatched"], r["explained"]), (1, 0))
        # A function no trace names as a kept callee.
        r = self.compare(self.startup(6, "other"), self.startup(1, "other"), {"gl_sockets_startup"})
        self.assertEqual((r["mismatched"], r["explained"]), (1, 0))
        self.assertFalse(corpus.counts_check(r, "edge")["ok"])

    def test_branches_of_a_kept_callee_that_disagree_with_equal_entries_fail(self):
        r = self.compare(dict(diamond(6, 4), name="twice"), dict(diamond(7, 3), name="twice"), {"twice"})
        self.assertEqual((r["mismatched"], r["explained"]), (1, 0))


class RunsWrittenApart(unittest.TestCase):
    """Edge mode writes a run whose signal handler did not return apart; trace mode reads it (m4's
    stack-overflow test): with such runs in the baseline, more trace entries are explained, nothing else."""

    def main(self, n):
        return record([([405], n)], [(0, 1, "return", None, n)], name="main")

    def compare(self, trace, edge, apart):
        return corpus.compare_counts(segments.aggregate([trace]), segments.aggregate([edge]), (), (), apart)

    def test_more_entries_are_explained_only_with_runs_apart(self):
        r = self.compare(self.main(247), self.main(246), 5)
        self.assertEqual((r["mismatched"], r["explained"]), (0, 1))
        self.assertIn("written apart", r["explained_samples"][0]["why"])
        self.assertEqual((self.compare(self.main(247), self.main(246), 0)["mismatched"]), 1)

    def test_fewer_entries_or_other_branches_still_fail(self):
        self.assertEqual(self.compare(self.main(245), self.main(246), 5)["mismatched"], 1)
        r = self.compare(dict(diamond(6, 4), name="f"), dict(diamond(7, 3), name="f"), 5)
        self.assertEqual((r["mismatched"], r["explained"]), (1, 0))


def block_mode(rec):
    """The block-mode record of the same execution: block counts only (edges measured by nobody)."""
    return dict(rec, mode="block", edges=[dict(e, count=None) for e in rec["edges"]])


class BlockMode(unittest.TestCase):
    def test_block_counts_of_the_same_execution_compare_equal(self):
        r = compare([block_mode(diamond(7, 3))], [diamond(7, 3)])
        self.assertEqual((r["compared"], r["mismatched"]), (1, 0))

    def test_a_miscounted_block_is_caught(self):
        # Right entries and total, one arm's count off: the then-block counted 6 instead of 7.
        wrong = block_mode(diamond(7, 3))
        wrong["blocks"][1] = dict(wrong["blocks"][1], count=6)
        r = compare([wrong], [diamond(7, 3)])
        self.assertEqual((r["mismatched"], r["samples"][0]["segment"], r["samples"][0]["count"]), (1, 1, [6]))

    def test_block_counts_moved_between_copies_compare_as_a_sum(self):
        a = [block_mode(diamond(4, 1)), block_mode(dict(diamond(1, 0), module_output="g.o"))]
        b = [diamond(0, 0), dict(diamond(5, 1), module_output="g.o")]
        r = compare(a, b)
        self.assertEqual((r["mismatched"], r["equal_as_sum"]), (0, 1))

    def test_other_blocks_are_not_comparable(self):
        r = compare([block_mode(diamond(7, 3, split_left=True))], [diamond(7, 3)])
        self.assertEqual((r["compared"], r["not_comparable"]), (0, 1))




class TestLogs(unittest.TestCase):
    """The test-log readers (corpus.parse_results), on lines as the harnesses print them."""

    def test_autotest_summary_lines_give_one_result_per_case(self):
        log = ("## Running the tests. ##\n"
               "  1: gdbm version                                    ok\n"
               " 12: reorganize                                      skipped (reorg.at:17)\n"
               "123: dump and load                                   FAILED (dump.at:40)\n"
               "  4: known bug                                       expected failure (bug.at:3)\n"
               "All 3 tests were successful.\n")
        r = corpus.parse_results("autotest", log, None, {}, 0)
        self.assertEqual(r, {"1 gdbm version": "OK", "12 reorganize": "SKIPPED", "123 dump and load": "FAILED",
                             "4 known bug": "EXPECTED FAILURE"})


if __name__ == "__main__":
    unittest.main()
