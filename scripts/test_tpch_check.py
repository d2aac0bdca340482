#!/usr/bin/env python3
"""Tests of scripts/tpch_check.py without strata's SQL layer.

    python3 scripts/test_tpch_check.py PARQUET_DIR

PARQUET_DIR holds the eight files of `strata gen tpch --sf 0.01 --parquet-only
--parquet DIR` (scripts/test_tpch_check.sh makes them). The script writes
DuckDB's answers, checks that it accepts them as strata's results, and that it
rejects copies with one value beyond the spec's tolerance, one row missing, one
string changed or two rows swapped, naming query, row and column; unit tests
cover the tolerance rules and tied ORDER BY keys. Ends with the line
'N passed, M failed'.
"""

import contextlib
import io
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tpch_check as tc  # noqa: E402

QUERIES = Path(__file__).resolve().parent.parent / "crates" / "sql" / "queries"
PARQUET: Path | None = None


def run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = tc.main([str(a) for a in args])
    return code, out.getvalue() + err.getvalue()


def edit_csv(path: Path, change) -> None:
    header, rows = tc.read_result(path)
    rows = change(rows)
    tc.write_result(path, header, rows)


class Rules(unittest.TestCase):
    def test_exact_values(self):
        self.assertTrue(tc.values_match("exact", "17.00", "17"))
        self.assertTrue(tc.values_match("exact", "BUILDING  ", "BUILDING"))
        self.assertTrue(tc.values_match("exact", "1995-03-15", "1995-03-15 00:00:00"))
        self.assertFalse(tc.values_match("exact", "17.01", "17"))
        self.assertFalse(tc.values_match("count", "14877", "14876"))
        self.assertFalse(tc.values_match("exact", "Brand#12", "Brand#13"))
        self.assertFalse(tc.values_match("exact", " x", "x"))  # only trailing blanks go
        self.assertFalse(tc.values_match("exact", "1", "one"))

    def test_sum_within_100(self):
        self.assertTrue(tc.values_match("sum", "505822441.4861", "505822541.48"))
        self.assertTrue(tc.values_match("sum", "-50", "50"))
        self.assertFalse(tc.values_match("sum", "505822441.4861", "505822541.49"))

    def test_avg_and_ratio_within_one_percent_at_two_decimals(self):
        self.assertTrue(tc.values_match("avg", "25.575154611454693", "25.58"))
        self.assertTrue(tc.values_match("avg", "25.80", "25.575"))  # 0.88% off
        self.assertFalse(tc.values_match("avg", "25.90", "25.575"))  # 1.3% off
        self.assertTrue(tc.values_match("ratio", "0.0449", "0.0451"))
        self.assertFalse(tc.values_match("ratio", "0.03", "0.05"))
        self.assertTrue(tc.values_match("ratio", "0.0", "0"))

    def test_order_by_clause_is_the_outermost(self):
        sql = "select a, b as bb from t where x in (select y from u order by y) order by bb desc, t.a limit 5;"
        self.assertEqual(tc.order_keys(sql, ["a", "bb"], "q"), [1, 0])
        self.assertIsNone(tc.order_keys("select sum(x) as s from t -- order by s", ["s"], "q"))
        with self.assertRaises(tc.UsageError) as e:
            tc.order_keys("select a from t order by b", ["a"], "q99")
        self.assertIn("q99: ORDER BY item 'b'", str(e.exception))

    def test_tied_rows_may_come_in_any_order(self):
        names = ["k", "name", "revenue"]
        want = [["2", "b", "10.00"], ["2", "a", "11.00"], ["1", "c", "12.00"]]
        got = [["2", "a", "11.00"], ["2", "b", "10.00"], ["1", "c", "12.00"]]
        self.assertEqual(tc.compare("q", names, want, names, got, [0]), [])
        # ...but not across different keys.
        got = [["1", "c", "12.00"], ["2", "a", "11.00"], ["2", "b", "10.00"]]
        diffs = tc.compare("q", names, want, names, got, [0])
        self.assertTrue(diffs and "row 1, column 1 (k, an ORDER BY key)" in diffs[0], diffs)
        # Ordered by all columns: a swap is a difference.
        got = [["2", "a", "11.00"], ["2", "b", "10.00"], ["1", "c", "12.00"]]
        diffs = tc.compare("q", names, want, names, got, [0, 1])
        self.assertTrue(diffs and "row 1, column 2 (name, an ORDER BY key)" in diffs[0], diffs)

    def test_shape_differences(self):
        names = ["a", "b"]
        self.assertIn("1 columns", tc.compare("q", names, [["1", "2"]], ["a"], [["1"]], None)[0])
        self.assertIn("columns (a, c)", tc.compare("q", names, [["1", "2"]], ["a", "c"], [["1", "2"]], None)[0])
        self.assertEqual(tc.compare("q", names, [["1", "2"]], ["T.A", "b"], [["1", "2"]], None), [])


@unittest.skipIf(PARQUET is None and len(sys.argv) < 2, "needs the SF 0.01 Parquet directory")
class EndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="tpch_check_"))
        cls.expected = cls.tmp / "expected"
        code, out = run("--parquet", PARQUET, "--queries", QUERIES, "--write-expected", cls.expected)
        assert code == 0, out
        cls.write_out = out

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def copy(self, name: str) -> Path:
        d = self.tmp / name
        shutil.copytree(self.expected, d)
        return d

    def check(self, results: Path) -> tuple[int, str]:
        return run("--parquet", PARQUET, "--queries", QUERIES, "--results", results)

    def test_all_22_written(self):
        self.assertEqual(sorted(p.name for p in self.expected.glob("*.csv")), [f"q{i:02}.csv" for i in range(1, 23)])
        header, rows = tc.read_result(self.expected / "q01.csv")
        self.assertEqual(header[:3], ["l_returnflag", "l_linestatus", "sum_qty"])
        self.assertEqual([r[:2] for r in rows], [["A", "F"], ["N", "F"], ["N", "O"], ["R", "F"]])
        # count_order adds up to the lineitems shipped by 1998-09-02: most of 60 175.
        self.assertGreater(sum(int(r[9]) for r in rows), 55000)

    def test_expected_matches_itself(self):
        code, out = self.check(self.expected)
        self.assertEqual(code, 0, out)
        self.assertIn("22 of 22 queries match DuckDB", out)
        self.assertEqual(sum(1 for l in out.splitlines() if "  ok  " in l), 22, out)

    def test_value_within_tolerance_passes(self):
        d = self.copy("within")
        # sum_qty is a SUM: 50 off is within the spec's $100.
        edit_csv(d / "q01.csv", lambda rows: [[*r[:2], f"{float(r[2]) + 50:.2f}", *r[3:]] if i == 0 else r for i, r in enumerate(rows)])
        code, out = self.check(d)
        self.assertEqual(code, 0, out)

    def test_value_beyond_tolerance_fails(self):
        d = self.copy("beyond")
        edit_csv(d / "q01.csv", lambda rows: [[*r[:2], f"{float(r[2]) + 1000:.2f}", *r[3:]] if i == 1 else r for i, r in enumerate(rows)])
        code, out = self.check(d)
        self.assertEqual(code, 1, out)
        self.assertIn("q01  FAIL", out)
        self.assertIn("q01: row 2, column 3 (sum_qty) (sum tolerance): strata '9971.00', duckdb '8971.00'", out)
        self.assertIn("21 of 22 queries match DuckDB", out)

    def test_missing_row_fails(self):
        d = self.copy("missing")
        _, rows = tc.read_result(self.expected / "q10.csv")
        edit_csv(d / "q10.csv", lambda rows: rows[:4] + rows[5:])
        code, out = self.check(d)
        self.assertEqual(code, 1, out)
        self.assertIn("q10: 19 rows, DuckDB has 20", out)
        self.assertIn(f"q10: row 5 of DuckDB's answer is missing: {rows[4]}", out)

    def test_changed_string_fails(self):
        d = self.copy("string")
        edit_csv(d / "q10.csv", lambda rows: [[r[0], "Customer#999999999", *r[2:]] if i == 2 else r for i, r in enumerate(rows)])
        _, rows = tc.read_result(self.expected / "q10.csv")
        code, out = self.check(d)
        self.assertEqual(code, 1, out)
        self.assertIn(f"q10: row 3, column 2 (c_name): strata 'Customer#999999999', duckdb '{rows[2][1]}'", out)

    def test_swapped_rows_fail(self):
        d = self.copy("swapped")
        edit_csv(d / "q03.csv", lambda rows: [rows[1], rows[0], *rows[2:]])
        code, out = self.check(d)
        self.assertEqual(code, 1, out)
        self.assertIn("q03: row 1, column 2 (revenue, an ORDER BY key)", out)

    def test_missing_result_file_fails(self):
        d = self.copy("nofile")
        (d / "q22.csv").unlink()
        code, out = self.check(d)
        self.assertEqual(code, 1, out)
        self.assertIn("q22  FAIL     no strata result", out)

    def test_bad_usage_exits_2(self):
        code, out = run("--parquet", self.tmp / "nowhere", "--queries", QUERIES, "--results", self.expected)
        self.assertEqual(code, 2, out)
        self.assertIn("lineitem.parquet", out)
        code, out = run("--parquet", PARQUET, "--queries", QUERIES, "--results", self.expected, "--only", "q23")
        self.assertEqual(code, 2, out)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        PARQUET = Path(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed - len(result.skipped)} passed, {failed} failed, {len(result.skipped)} skipped")
    sys.exit(1 if failed else 0)
