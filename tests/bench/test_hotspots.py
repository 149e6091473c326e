"""hotspots.py: perf's report read back, and two runs compared per
request."""
import hotspots

REPORT = """# Samples: 40K of event 'cpu-clock'
#
# Overhead       Samples  Symbol
# ........  ............  ..............................
#
     6.90%          2760  [k] _raw_spin_unlock_irqrestore
     3.08%          1232  [.] __vdso_clock_gettime
     0.58%           232  [k] n2l_map
     0.01%             4  [k] foo bar

"""


def test_report_read_back():
    assert hotspots.parse_report(REPORT) == {
        "_raw_spin_unlock_irqrestore": 2760, "__vdso_clock_gettime": 1232,
        "n2l_map": 232, "foo bar": 4}


def test_instructions_per_request():
    # a sample is 1e9 / FREQ instructions: 20 samples over 10 requests
    assert hotspots.per_request(20, 10) == 2 * 1e9 / hotspots.FREQ
    assert hotspots.per_request(5, 0) == 0.0


def test_compare_puts_the_contenders_extra_first():
    base = (1000, {"a": 100, "b": 50})
    cont = (500, {"a": 50, "b": 100, "c": 10})     # half the requests
    rows, (tb, tc) = hotspots.compare(base, cont, top=2)
    unit = 1e9 / hotspots.FREQ
    assert [r[0] for r in rows] == ["b", "c"]
    assert rows[0][1:] == (50 * unit / 1000, 100 * unit / 500)
    assert (tb, tc) == (150 * unit / 1000, 160 * unit / 500)


def test_comparison_lines_give_each_case_its_totals_and_symbols():
    profs = [{"case": "randwrite 4k qd1", "instructions_per_request": (13395.4, 14162.2),
              "symbols": [{"symbol": "n2l_map", "a": 0, "b": 86}]}]
    assert hotspots.comparison_lines(profs, "a", "b") == [
        "", "### randwrite 4k qd1: 13395 instructions a request on a, 14162 on b (+767)", "",
        "| symbol | a | b | more |", "|---|---:|---:|---:|", "| `n2l_map` | 0 | 86 | +86 |"]
